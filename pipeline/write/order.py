"""Which record fills each place of a shard: the input's order, or ``--shuffle=global``'s.

The split is cut into shards in (epoch, file, chunk) order (``pipeline.write.shard_plan``):
shard ``k`` holds *positions* ``[k*R, (k+1)*R)``, written in its plan as ranges of the parts
(``ShardPlan.pieces``). An order maps those positions to the records that fill them, a
``Window`` at a time in position order: (part, first record, count) ranges to read, and which
of the read records go out in which order (``picks``; None: all, as read):

- ``InputOrder`` (the identity): position ``p`` holds record ``p``; the pieces are the ranges,
  copied as whole byte ranges, ``window_records`` at a time.
- ``ShuffledOrder`` (``--shuffle=global``): records are numbered ``0 .. n-1`` in the input's
  order by prefix sums over the parts, and ordered by ``schemas.block_shuffle``: blocks of
  neighbouring records of one part permuted over the whole split, then the records of a window
  of blocks permuted among themselves. A window of the shuffle is one ``Window``: its blocks
  that the shard needs, one range (one ranged read) each, and the picks. Shard names and sizes
  are as in the input's order; the padding moves with the records (``ShuffledOrder.replan``).

Worked example (tests assert it): parts ``a`` and ``b`` of 3 and 2 records, one shard of 5
(pieces ``(a, 0, 3)``, ``(b, 0, 2)``), windows of 2 records. The input's order:
``[(a, 0, 2)]``, ``[(a, 2, 1)]``, ``[(b, 0, 2)]``. Shuffled with seed 1, blocks of 2 records
and windows of 2 blocks (``schemas.block_shuffle``'s example: records 0, 4, 3, 1, 2): window 0
reads ``(a, 0, 2)``, ``(b, 0, 2)`` and picks 0, 3, 2, 1; window 1 reads ``(a, 2, 1)``, picks 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property

import numpy as np

from pipeline.write.shard_plan import PartInfo, Piece, ShardPlan, ordered_parts, plan_shards
from schemas.block_shuffle import DEFAULT_SPEC, BlockShuffle, BlockShuffleSpec

Range = tuple[str, int, int]  # (part path, first record, count)


@dataclasses.dataclass(frozen=True, eq=False)
class Window:
    """Ranges to read (concatenated in this order), and the frames of that concatenation
    that go out, in order (None: every frame, as read)."""

    ranges: list[Range]
    picks: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class InputOrder:
    """The identity: a shard's pieces, cut into windows, are the ranges to copy."""

    def windows(self, pieces: Iterable[Piece], *, window_records: int) -> Iterator[Window]:
        for piece in pieces:
            for first in range(piece.first, piece.first + piece.count, window_records):
                count = min(window_records, piece.first + piece.count - first)
                yield Window([(piece.part, first, count)])


@dataclasses.dataclass(frozen=True, eq=False)
class ShuffledOrder:
    """The parts in order and their block shuffle (each part's start, one number a window)."""

    paths: tuple[str, ...]
    shuffle: BlockShuffle

    @classmethod
    def of(cls, ordered: Sequence[PartInfo], *, seed: int,
           spec: BlockShuffleSpec = DEFAULT_SPEC) -> ShuffledOrder:
        starts = np.zeros(len(ordered) + 1, dtype=np.int64)
        np.cumsum([p.records for p in ordered], out=starts[1:])
        return cls(paths=tuple(p.path for p in ordered),
                   shuffle=BlockShuffle(starts=starts, seed=seed, spec=spec))

    @property
    def records(self) -> int:
        return self.shuffle.records

    @cached_property
    def _index(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.paths)}

    def windows(self, pieces: Iterable[Piece], *, window_records: int) -> Iterator[Window]:
        # A shard's pieces are its positions [start, stop), contiguous in the input's
        # numbering. Memory is the shuffle's window, whatever window_records says.
        pieces = [p for p in pieces if p.count]
        if not pieces:
            return
        start = int(self.shuffle.starts[self._index[pieces[0].part]]) + pieces[0].first
        stop = start + sum(p.count for p in pieces)
        bounds = self.shuffle.window_starts
        first = int(np.searchsorted(bounds, start, side="right")) - 1
        last = int(np.searchsorted(bounds, stop - 1, side="right")) - 1
        for window in range(first, last + 1):
            lo, hi = max(start, int(bounds[window])), min(stop, int(bounds[window + 1]))
            yield self._window(window, np.arange(lo, hi) - bounds[window])

    def _window(self, window: int, offsets: np.ndarray) -> Window:
        index = self.shuffle.within_window(window, offsets)
        part, first, size = self.shuffle.window_blocks_of(window)
        ends = np.cumsum(size)
        block = np.searchsorted(ends, index, side="right")
        # Only the blocks this shard needs (a window may straddle two shards), one range each.
        needed = np.unique(block)
        at = np.zeros(len(size), dtype=np.int64)
        at[needed] = np.cumsum(size[needed]) - size[needed]
        ranges = [(self.paths[part[b]], int(first[b]), int(size[b])) for b in needed.tolist()]
        return Window(ranges, at[block] + index - (ends - size)[block])

    def replan(self, plans: Sequence[ShardPlan], ordered: Sequence[PartInfo], *,
               per_shard: int) -> list[ShardPlan]:
        """The input order's plans with each shard's padding counted where its records went
        (each padded record's position found with the inverse order)."""
        padding = np.zeros(len(plans), dtype=np.int64)
        starts = self.shuffle.starts
        padded = [(int(starts[i]) + record, pads) for i, part in enumerate(ordered)
                  for record, pads in part.padded]
        if padded:
            positions = self.shuffle.inverse([g for g, _ in padded])
            np.add.at(padding, positions // per_shard, [pads for _, pads in padded])
        # tokens + padding_tokens is the shard's label positions, whatever the order.
        return [dataclasses.replace(plan, padding_tokens=int(pads),
                                    tokens=plan.tokens + plan.padding_tokens - int(pads))
                for plan, pads in zip(plans, padding)]


Order = InputOrder | ShuffledOrder


def plan_ordered_shards(parts: Iterable[PartInfo], *, split: str, per_shard: int, seq_len: int,
                        frame_bytes: int, seed: int | None = None,
                        shuffle: BlockShuffleSpec = DEFAULT_SPEC
                        ) -> tuple[Order, list[ShardPlan]]:
    """The order (``seed`` None: the input's; else shuffled by it, in ``shuffle``'s blocks
    and windows) and the shards' plans."""
    ordered = ordered_parts(parts, frame_bytes=frame_bytes)
    plans = plan_shards(ordered, split=split, per_shard=per_shard, seq_len=seq_len,
                        frame_bytes=frame_bytes)
    if seed is None:
        return InputOrder(), plans
    order = ShuffledOrder.of(ordered, seed=seed, spec=shuffle)
    return order, order.replan(plans, ordered, per_shard=per_shard)
