"""Which records go into which shard: a pure function of the parts' record counts.

Every chunk's records are written first as a *part* (``pipeline.write.parts``), named by its
(epoch, input file, chunk) key (the epoch is a mixture's copy number,
``pipeline.quality.mixture``; 0 without one). Once every part exists, the parts are ordered by
that key (the input's own order, epoch by epoch) and the whole split is cut into shards of
``records_per_shard`` records each, so every shard but the split's last holds exactly that
many: within one record of ``--shard_bytes``. A shard is then the concatenation of record
ranges of one or more parts (TFRecord frames concatenate). Nothing here depends on which worker
wrote which part, in which bundle or order, or how often: the plan, and so every shard's name
and bytes, follows from the input and the options alone.

Worked example (tests assert it): parts of 3, 0 and 4 records, 3 records per shard ->
shard 0 = part 0 records 0-2; shard 1 = part 2 records 0-2; shard 2 = part 2 record 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from common.errors import DataError

PARTS_DIR = ".parts"


def part_path(*, file_index: int, chunk_index: int, epoch: int = 0) -> str:
    """A part's path relative to the dataset directory (epoch > 0: a mixture's copies)."""
    name = f"{file_index:05d}-{chunk_index:07d}.tfrecords"
    return f"{PARTS_DIR}/{name}" if epoch == 0 else f"{PARTS_DIR}/e{epoch:04d}-{name}"


def shard_name(*, split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord"


@dataclasses.dataclass(frozen=True)
class PartInfo:
    """One chunk's records, written as a part file."""

    file_index: int
    chunk_index: int
    path: str  # relative to the dataset directory
    records: int
    bytes: int
    # (record index, padding tokens) for each record holding padding (a chunk's last, at most)
    padded: tuple[tuple[int, int], ...] = ()
    epoch: int = 0  # copy number of its documents (pipeline.quality.mixture): epoch-major order

    @property
    def key(self) -> tuple[int, int, int]:
        return self.epoch, self.file_index, self.chunk_index


@dataclasses.dataclass(frozen=True)
class Piece:
    """Records ``[first, first + count)`` of a part."""

    part: str
    first: int
    count: int


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    index: int
    name: str  # relative to the dataset directory
    pieces: tuple[Piece, ...]
    records: int
    tokens: int  # real label positions
    padding_tokens: int


def records_per_shard(*, shard_bytes: int, frame_bytes: int) -> int:
    """The most whole records that fit in ``shard_bytes`` (at least one)."""
    return max(1, shard_bytes // frame_bytes)


def plan_shards(parts: Iterable[PartInfo], *, split: str, per_shard: int, seq_len: int,
                frame_bytes: int) -> list[ShardPlan]:
    """Cut the parts, in (epoch, file, chunk) order, into shards of ``per_shard`` records.

    Raises:
      DataError: two parts with one key, or a part whose size is not its records' frames.
    """
    ordered = ordered_parts(parts, frame_bytes=frame_bytes)
    total = sum(p.records for p in ordered)
    count = -(-total // per_shard)
    plans, pieces, records, padding = [], [], 0, 0
    for part in ordered:
        padded = dict(part.padded)
        first = 0
        while first < part.records:
            take = min(part.records - first, per_shard - records)
            pieces.append(Piece(part.path, first, take))
            records += take
            padding += sum(n for i, n in padded.items() if first <= i < first + take)
            first += take
            if records == per_shard:
                plans.append(_plan(len(plans), count, split, pieces, records, padding, seq_len))
                pieces, records, padding = [], 0, 0
    if records:
        plans.append(_plan(len(plans), count, split, pieces, records, padding, seq_len))
    return plans


def ordered_parts(parts: Iterable[PartInfo], *, frame_bytes: int) -> list[PartInfo]:
    """The parts in (epoch, file, chunk) order, checked: one part per key, whole frames."""
    ordered = sorted(parts, key=lambda p: p.key)
    for a, b in zip(ordered, ordered[1:]):
        if a.key == b.key:
            # A chunk reported twice (a duplicated bundle): refuse, typed, before any shard.
            raise DataError(f"two parts for (epoch, file, chunk) {a.key}: {a.path} and "
                            f"{b.path}; a chunk was processed twice, so no shard or manifest "
                            "was written: rerun the same command")
    for part in ordered:
        if part.bytes != part.records * frame_bytes:
            raise DataError(f"part {part.path} has {part.bytes} bytes, expected "
                             f"{part.records} records of {frame_bytes} bytes")
    return ordered


def _plan(index, count, split, pieces, records, padding, seq_len) -> ShardPlan:
    # Each record has seq_len label positions; a padding token removes one (pipeline.write.pack).
    return ShardPlan(index=index, name=shard_name(split=split, index=index, count=count),
                     pieces=tuple(pieces), records=records, tokens=records * seq_len - padding,
                     padding_tokens=padding)
