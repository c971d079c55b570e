"""Which documents go into which Megatron pair: a pure function of the document parts' sizes.

With ``--formats=...,megatron`` every chunk also writes a *document part*
(``pipeline.write.formats.megatron``): its documents' token ids, each followed by EOS,
concatenated in Megatron's dtype, then their lengths (int32). Once every part exists, the parts are ordered by
their (epoch, input file, chunk) key, as the TFRecord parts are (the input's order, epoch by
epoch for a mixture; never ``--shuffle=global``'s: Megatron shuffles at training time), and
cut into pairs of whole parts: a pair takes the next part while its ``.bin`` stays within
``shard_bytes`` (a part larger than that alone makes a pair). So every pair but the last is
within one part (a chunk's tokens, ~``--chunk_bytes`` / 2 bytes) of ``--shard_bytes``, and the
plan needs only each part's counts, never its documents' lengths. Parts without documents are
left out.

Worked example (tests assert it): parts of 40, 0, 30, 50 and 10 bytes, ``shard_bytes`` 80 ->
pair 0 = parts 0 and 2 (70 bytes), pair 1 = parts 3 and 4 (60 bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from common.errors import DataError
from pipeline.write.shard_plan import part_path

MEGATRON_DIR = "megatron"  # the pairs' folder in the dataset directory


def document_part_path(*, file_index: int, chunk_index: int, epoch: int = 0) -> str:
    """Beside the chunk's TFRecord part, under the same key."""
    records = part_path(file_index=file_index, chunk_index=chunk_index, epoch=epoch)
    return records.removesuffix(".tfrecords") + ".documents"


def pair_prefix(*, split: str, index: int, count: int) -> str:
    """A pair's path without ``.bin``/``.idx``, relative to the dataset directory."""
    return f"{MEGATRON_DIR}/{split}-{index:05d}-of-{count:05d}"


@dataclasses.dataclass(frozen=True)
class DocumentPartInfo:
    """One chunk's documents (one epoch's copies), written as a document part."""

    file_index: int
    chunk_index: int
    path: str  # relative to the dataset directory
    documents: int
    tokens: int  # EOS included
    bytes: int  # of the tokens; the lengths follow them in the file
    epoch: int = 0

    @property
    def key(self) -> tuple[int, int, int]:
        return self.epoch, self.file_index, self.chunk_index


@dataclasses.dataclass(frozen=True)
class PairPlan:
    index: int
    prefix: str
    parts: tuple[DocumentPartInfo, ...]

    @property
    def documents(self) -> int:
        return sum(p.documents for p in self.parts)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)


def plan_pairs(parts: Iterable[DocumentPartInfo], *, split: str, shard_bytes: int,
               token_bytes: int) -> list[PairPlan]:
    """Cut the parts, in (epoch, file, chunk) order, into pairs of at most ``shard_bytes``.

    Raises:
      DataError: two parts with one key, or a part whose size is not its tokens'.
    """
    groups, group, size = [], [], 0
    for part in _ordered(parts, token_bytes=token_bytes):
        if not part.documents:
            continue
        if group and size + part.bytes > shard_bytes:
            groups.append(group)
            group, size = [], 0
        group.append(part)
        size += part.bytes
    if group:
        groups.append(group)
    return [PairPlan(index=i, prefix=pair_prefix(split=split, index=i, count=len(groups)),
                     parts=tuple(g)) for i, g in enumerate(groups)]


def _ordered(parts: Iterable[DocumentPartInfo], *, token_bytes: int) -> list[DocumentPartInfo]:
    ordered = sorted(parts, key=lambda p: p.key)
    for a, b in zip(ordered, ordered[1:]):
        if a.key == b.key:
            raise DataError(f"two document parts for (epoch, file, chunk) {a.key}: {a.path} and "
                            f"{b.path}; a chunk was processed twice, so no file or manifest was "
                            "written: rerun the same command")
    for part in ordered:
        if part.bytes != part.tokens * token_bytes:
            raise DataError(f"document part {part.path} has {part.bytes} bytes of tokens, "
                            f"expected {part.tokens} tokens of {token_bytes} bytes")
    return ordered


def part_layout(part: DocumentPartInfo) -> tuple[int, int]:
    """(offset, size) of the part's int32 lengths, after its tokens."""
    return part.bytes, part.documents * np.dtype("<i4").itemsize
