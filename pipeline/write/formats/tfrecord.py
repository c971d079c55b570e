"""The ``tfrecord`` format, always written: the packed records themselves.

Pack, WriteParts and WriteShards write it (``pipeline.write``), and the manifest's shards list
it; this row of the table says only which files are its.
"""

from __future__ import annotations

from pipeline.write.formats.base import OutputFormat, entries
from schemas.formats import TFRECORD


class TFRecordFormat(OutputFormat):
    """``tfrecord``: ``SPLIT-NNNNN-of-NNNNN.tfrecord`` shards (``shard_plan.shard_name``)."""

    name = TFRECORD

    @classmethod
    def file_pattern(cls, numbered: str) -> str:
        return rf"{numbered}\.tfrecord"  # write.shard_plan.shard_name

    @classmethod
    def listed_entries(cls, doc: dict) -> list[dict]:
        return entries(doc.get("shards"))
