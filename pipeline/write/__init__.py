"""Stages 3-4, Pack and Write: token ids -> fixed-length records -> part files -> TFRecord shards.

Data flow: ``pack`` (records of ``seq_len + 1`` tokens) -> ``parts`` (one file per chunk, with a
progress sidecar) -> ``shard_plan`` -> ``shards``, in the ``order`` of the input or of a
``schemas.block_shuffle``; other ``--formats`` plug in through ``formats`` (one table); rejected lines
go to ``dead_letters``. May import: ``pipeline.config``, ``.read``, ``.quality``, ``.tokenize``.
"""
