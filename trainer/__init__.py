"""A slim TensorFlow GPT trainer that reads pilepack datasets (manifest + TFRecord shards).

Entry points: ``python -m trainer.train``, ``trainer.evaluate``, ``trainer.generate``,
``trainer.export``, ``trainer.profile_report``, ``trainer.memory`` and ``trainer.sagemaker``.
The pieces, one file per concern: ``model/`` (the GPT), ``input/`` (which order, from which
record: one order for any number of ranks by ranged reads, or ``--order=files``'s tf.data of
each rank's shards; evaluation), ``distribute/`` (rank, world size, chief, all-reduce),
``loop`` (the custom training loop), ``checkpoint``, ``optim``, ``loss``, ``compat`` (manifest
<-> model checks), ``memory`` (what fits on one GPU), ``observe/`` (TensorBoard, the profiler),
``export/`` (the servable model), ``sagemaker/`` (SageMaker jobs: launching, and inside one).
"""

from common.cli import quiet_tensorflow_in_commands

quiet_tensorflow_in_commands("trainer")  # before any module of a command imports TensorFlow
