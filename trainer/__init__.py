"""A slim TensorFlow GPT trainer that reads pilepack datasets (manifest + TFRecord shards).

Entry points: ``python -m trainer.train``, ``trainer.evaluate``, ``trainer.generate``,
``trainer.export``, ``trainer.profile_report``, ``trainer.memory`` and ``trainer.sagemaker``.
The pieces, one file per concern: ``model/`` (the GPT), ``data`` (tf.data per rank),
``distribute/`` (rank, world size, chief, all-reduce), ``loop`` (the custom training loop),
``checkpoint``, ``optim``, ``loss``, ``compat`` (manifest <-> model checks), ``memory`` (what
fits on one GPU), ``observe/`` (TensorBoard, the profiler), ``export/`` (the servable model).
"""

from common.cli import quiet_tensorflow_in_commands

quiet_tensorflow_in_commands("trainer")  # before any module of a command imports TensorFlow
