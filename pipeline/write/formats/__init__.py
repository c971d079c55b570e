"""The output formats (``--formats``): the hooks every format has (``base``), one module per
format (``tfrecord``, ``megatron`` with its pair plan, ``arrayrecord``), and the one table of
them (``registry``) that Pack, WriteParts, WriteShards, the run's graph, the manifest and the
output directory's cleanup read. A new format: its module and its row in ``registry``.
"""
