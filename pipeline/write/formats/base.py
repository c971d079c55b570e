"""What an output format is to the rest of the pipeline: the hooks of ``OutputFormat``.

A format is built from one of two sources (``built_from``):

- ``DOCUMENTS``: each chunk's documents. Pack hands every chunk epoch's documents to
  ``chunk_data`` (tuples of numpy arrays, carried on in ``PackedChunk.format_data``),
  WriteParts writes them with ``write_part`` (a part beside the chunk's TFRecord part, named by
  the same key) and outputs its info under the format's name, and once every part exists
  ``assemble`` turns those infos into the format's files (e.g. ``megatron``).
- ``RECORDS``: the TFRecord shards' records. WriteShards hands every window of frames it writes
  to a ``shard_sink`` (a context manager with ``write(frames)`` and, once left, ``info``), so the
  format's file mirrors the shard with no second read (e.g. ``arrayrecord``).

Either way the format's files reach the manifest as ``FormatFile``s (each names its format),
where ``manifest_section`` lists them and ``accounting_problem`` checks them
(``pipeline.dataset.format_sections``); ``file_pattern``, ``folder`` and ``listed_entries`` tell
``pipeline.launch.output_dir`` which files in ``--output`` are the format's. The hooks that need
the run's options are methods of an instance built from a ``WriteContext``; the others are
class methods.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from schemas.claim import NO_FENCE, Fence
from schemas.records import RecordSpec

DOCUMENTS = "documents"  # built from each chunk's documents (Pack -> WriteParts -> assemble)
RECORDS = "records"  # built from the shards' records (WriteShards' sinks)


@dataclasses.dataclass(frozen=True)
class WriteContext:
    """What every format's writers are given: where and how this run writes."""

    directory: str  # the dataset directory (--output)
    split: str
    shard_bytes: int
    record: RecordSpec
    vocab_size: int
    fence: Fence = NO_FENCE  # checked before each file is committed (schemas.claim.Fence)


class FormatFile:
    """A written file (or pair) of a format, on its way to the manifest."""

    format: ClassVar[str]  # the format's name in --formats


def entries(value) -> list[dict]:
    """The objects of a JSON list (nothing for anything else): a manifest read unchecked."""
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


@dataclasses.dataclass(frozen=True)
class OutputFormat:
    """One output format: its name, its source, and the hooks its source calls (no-ops here).

    Subclasses set ``name``, ``built_from`` and ``folder`` and override what they need.
    """

    name: ClassVar[str]
    built_from: ClassVar[str] = ""  # DOCUMENTS, RECORDS, or "" (TFRecord: the records themselves)
    folder: ClassVar[str] = ""  # its files' sub-folder of the dataset directory, if any

    context: WriteContext

    # Which files in --output are the format's (pipeline.launch.output_dir).
    @classmethod
    def file_pattern(cls, numbered: str) -> str:
        """A regex of the paths it writes, given ``numbered``, a regex of a split's
        ``SPLIT-NNNNN-of-NNNNN``."""
        raise NotImplementedError

    @classmethod
    def listed_entries(cls, doc: dict) -> list[dict]:
        """The file entries (with ``path``) a manifest lists of it (none without the format);
        ``doc`` may be any JSON (a manifest read unchecked)."""
        return []

    # The manifest (pipeline.dataset.format_sections).
    @classmethod
    def manifest_section(cls, files: list, *, shards: list, vocab_size: int) -> dict:
        """``{name: ...}``: its files (its ``FormatFile``s, in any order) as the manifest lists
        them; ``shards``: the TFRecord shards' ``ShardInfo``s, sorted."""
        return {}

    @classmethod
    def accounting_problem(cls, files: list, *, copies: int) -> str | None:
        """What is wrong when its files do not hold the ``copies`` of documents the part files
        hold; None when they do (or when it does not count documents)."""
        return None

    # Writing: DOCUMENTS formats.
    def chunk_data(self, documents, *, eos_id: int) -> tuple:
        """What it keeps of one chunk epoch's documents (token arrays): a tuple of numpy arrays
        (``PackedChunk.approx_bytes`` sizes them)."""
        raise NotImplementedError

    def write_part(self, data: tuple, *, file_index: int, chunk_index: int, epoch: int):
        """Write one chunk's ``chunk_data`` as a part; its info goes to ``assemble``."""
        raise NotImplementedError

    def assemble(self, parts):
        """PCollection of its parts' infos (every part written) -> PCollection[FormatFile]."""
        raise NotImplementedError

    # Writing: RECORDS formats.
    def shard_sink(self, plan):
        """The sink of one shard's frames (``pipeline.write.shards.assemble_shard``)."""
        raise NotImplementedError
