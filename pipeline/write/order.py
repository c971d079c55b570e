"""Which record fills each place of a shard: the input's order, or ``--shuffle=global``'s.

The split is cut into shards in (epoch, file, chunk) order (``pipeline.write.shard_plan``):
shard ``k`` holds *positions* ``[k*R, (k+1)*R)``, written in its plan as ranges of the parts
(``ShardPlan.pieces``). An order maps those positions to the records that fill them, as
(part, first record, count) ranges a window at a time, in position order:

- ``InputOrder`` (the identity): position ``p`` holds record ``p``; the pieces are the ranges,
  copied as whole byte ranges.
- ``ShuffledOrder`` (``--shuffle=global``): records are numbered ``0 .. n-1`` in the input's
  order by prefix sums over the parts, and position ``p`` holds record
  ``Permutation(n, seed).forward(p)`` (``schemas.permutation``), so every shard holds a
  uniform sample of the whole split. Its ranges are one record each; the permutation is mapped
  a window at a time, never held whole. Shard names and sizes are as in the input's order; the
  padding moves with the records (``ShuffledOrder.replan``).

Worked example (tests assert it): parts ``a`` and ``b`` of 3 and 2 records, one shard of 5
(pieces ``(a, 0, 3)``, ``(b, 0, 2)``), windows of 2 records. The input's order, windows within
a piece: ``[(a, 0, 2)]``, ``[(a, 2, 1)]``, ``[(b, 0, 2)]``. Shuffled with seed 0, positions 0-4
hold records 1, 4, 2, 3, 0: ``[(a, 1, 1), (b, 1, 1)]``, ``[(a, 2, 1), (b, 0, 1)]``,
``[(a, 0, 1)]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property

import numpy as np

from pipeline.write.shard_plan import PartInfo, Piece, ShardPlan, ordered_parts, plan_shards
from schemas.permutation import Permutation

Range = tuple[str, int, int]  # (part path, first record, count)


@dataclasses.dataclass(frozen=True)
class InputOrder:
    """The identity: a shard's pieces, cut into windows, are the ranges to copy."""

    def windows(self, pieces: Iterable[Piece], *, window_records: int) -> Iterator[list[Range]]:
        for piece in pieces:
            for first in range(piece.first, piece.first + piece.count, window_records):
                yield [(piece.part, first, min(window_records, piece.first + piece.count - first))]


@dataclasses.dataclass(frozen=True, eq=False)
class ShuffledOrder:
    """The parts in order, where each starts in the input's numbering, and the seed."""

    paths: tuple[str, ...]
    starts: np.ndarray  # int64 [parts + 1]: prefix sums of the parts' records
    seed: int

    @classmethod
    def of(cls, ordered: Sequence[PartInfo], *, seed: int) -> ShuffledOrder:
        starts = np.zeros(len(ordered) + 1, dtype=np.int64)
        np.cumsum([p.records for p in ordered], out=starts[1:])
        return cls(paths=tuple(p.path for p in ordered), starts=starts, seed=seed)

    @property
    def records(self) -> int:
        return int(self.starts[-1])

    @cached_property
    def permutation(self) -> Permutation:
        return Permutation(n=self.records, seed=self.seed)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.paths)}

    def locate(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Input-order record numbers -> (part index, record within the part)."""
        part = np.searchsorted(self.starts, records, side="right") - 1
        return part, records - self.starts[part]

    def windows(self, pieces: Iterable[Piece], *, window_records: int) -> Iterator[list[Range]]:
        # Whole windows across the pieces: the more records a window holds, the more of its
        # reads from one part fall close together.
        held, size = [], 0
        for piece in pieces:
            start = int(self.starts[self._index[piece.part]]) + piece.first
            stop = start + piece.count
            while start < stop:
                take = min(stop - start, window_records - size)
                held.append(np.arange(start, start + take))
                start, size = start + take, size + take
                if size == window_records:
                    yield self._ranges(np.concatenate(held))
                    held, size = [], 0
        if held:
            yield self._ranges(np.concatenate(held))

    def _ranges(self, positions: np.ndarray) -> list[Range]:
        part, record = self.locate(self.permutation.forward(positions))
        return [(self.paths[p], r, 1) for p, r in zip(part.tolist(), record.tolist())]

    def replan(self, plans: Sequence[ShardPlan], ordered: Sequence[PartInfo], *,
               per_shard: int) -> list[ShardPlan]:
        """The input order's plans with each shard's padding counted where its records went
        (each padded record's position found with the inverse permutation)."""
        padding = np.zeros(len(plans), dtype=np.int64)
        padded = [(int(self.starts[i]) + record, pads) for i, part in enumerate(ordered)
                  for record, pads in part.padded]
        if padded:
            positions = self.permutation.inverse([g for g, _ in padded])
            np.add.at(padding, positions // per_shard, [pads for _, pads in padded])
        # tokens + padding_tokens is the shard's label positions, whatever the order.
        return [dataclasses.replace(plan, padding_tokens=int(pads),
                                    tokens=plan.tokens + plan.padding_tokens - int(pads))
                for plan, pads in zip(plans, padding)]


Order = InputOrder | ShuffledOrder


def plan_ordered_shards(parts: Iterable[PartInfo], *, split: str, per_shard: int, seq_len: int,
                        frame_bytes: int, seed: int | None = None
                        ) -> tuple[Order, list[ShardPlan]]:
    """The order (``seed`` None: the input's; else shuffled by it) and the shards' plans."""
    ordered = ordered_parts(parts, frame_bytes=frame_bytes)
    plans = plan_shards(ordered, split=split, per_shard=per_shard, seq_len=seq_len,
                        frame_bytes=frame_bytes)
    if seed is None:
        return InputOrder(), plans
    order = ShuffledOrder.of(ordered, seed=seed)
    return order, order.replan(plans, ordered, per_shard=per_shard)
