"""A slim TensorFlow GPT trainer that reads pilepack datasets (manifest + TFRecord shards).

Entry points: ``python -m trainer.train`` and ``python -m trainer.evaluate``. The pieces, one
file per concern: ``model/`` (the GPT), ``data`` (tf.data per rank), ``distribute/`` (rank,
world size, chief, all-reduce), ``loop`` (the custom training loop), ``checkpoint``, ``optim``,
``loss``, ``compat`` (manifest <-> model checks), ``memory`` (what fits on one GPU).
"""
