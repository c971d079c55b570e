"""The output formats: one row per ``--formats`` name, the one table the pipeline reads.

Pack, WriteParts and WriteShards take the formats a run asks for (``extra_formats``) and call
their hooks (``pipeline.write.formats.base``), ``pipeline.run`` wires each one's files into the
graph, ``pipeline.dataset.format_sections`` asks each for its manifest section, and
``pipeline.launch.output_dir`` for its files: none of them names a format.

A new format is its module here (an ``OutputFormat``: built from each chunk's documents, or from
the shards' records) and its row below, under its name in ``schemas.formats.FORMATS`` (the
``--formats`` flag's vocabulary, which the options check below this package), plus its manifest
section in ``schemas/manifest.schema.json`` (the manifest's published contract).
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.write.formats.arrayrecord import ArrayRecordFormat
from pipeline.write.formats.base import OutputFormat, WriteContext
from pipeline.write.formats.megatron import MegatronFormat
from pipeline.write.formats.tfrecord import TFRecordFormat
from schemas.formats import ARRAYRECORD, MEGATRON, TFRECORD

FORMATS: dict[str, type[OutputFormat]] = {
    TFRECORD: TFRecordFormat,
    MEGATRON: MegatronFormat,
    ARRAYRECORD: ArrayRecordFormat,
}


def extra_classes(names: Iterable[str]) -> list[type[OutputFormat]]:
    """The formats beyond TFRecord among ``names`` (``--formats``), in the table's order."""
    names = set(names)
    return [cls for name, cls in FORMATS.items() if name in names and name != TFRECORD]


def extra_formats(names: Iterable[str], context: WriteContext) -> tuple[OutputFormat, ...]:
    """Those formats, each set up for this run (an ``OutputFormat`` instance)."""
    return tuple(cls(context) for cls in extra_classes(names))
