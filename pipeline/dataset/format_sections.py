"""The manifest's sections of the formats beyond TFRecord (``--formats``, docs/formats.md), each
from its row of ``pipeline.write.formats.registry``: its files listed, and checked against the
documents the part files hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.write.formats.registry import extra_classes


def format_sections(files: Mapping[str, list], *, formats: Sequence[str], shards: list,
                    vocab_size: int) -> dict:
    """Each asked-for format's section (``OutputFormat.manifest_section``); ``files``: format
    name -> its ``FormatFile``s, as reported; ``shards``: the ``ShardInfo``s, sorted.

    Raises:
      DataError: a format's files do not match the shards they mirror (a file lost).
    """
    sections = {}
    for cls in extra_classes(formats):
        sections.update(cls.manifest_section(files.get(cls.name, []), shards=shards,
                                             vocab_size=vocab_size))
    return sections


def files_problem(files: Mapping[str, list], *, copies: int,
                  formats: Sequence[str]) -> str | None:
    """What is wrong when an asked-for format's files do not hold the ``copies`` of documents
    the part files hold (``OutputFormat.accounting_problem``); None otherwise."""
    for cls in extra_classes(formats):
        problem = cls.accounting_problem(files.get(cls.name, []), copies=copies)
        if problem:
            return problem
    return None
