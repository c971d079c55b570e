"""The ``--shuffle=global`` order in two levels, so that records are read in blocks.

Records are numbered ``0 .. n-1`` in the input's order over the parts (``starts``: the parts'
prefix sums). Each part is cut into *blocks* of ``block_records`` neighbouring records (a
part's last block may be shorter), so a block never crosses a part and is read with one ranged
request. Two seeded bijections (``schemas.permutation``) then order them:

1. *blocks*: slot ``j`` of the split holds block ``Permutation(blocks, "blocks:{seed}")
   .forward(j)``; slots ``[w*W, (w+1)*W)`` (``W = window_blocks``) form window ``w``;
2. *records within a window*: the window's records, its blocks concatenated in slot order, are
   permuted by ``Permutation(size, "window:{seed}:{w}")``, and fill the window's positions.

A record's position is spread over the whole split by the first level, its neighbours mixed
from ``W`` blocks (of as many parts, at random) by the second; a reader of a window reads its
``W`` blocks, one request each, instead of one request per record. Memory: the parts' starts
and one number per window (``window_starts``), never a permutation of all records or blocks.

Worked example (tests assert it): parts of 3 and 2 records, ``block_records=2``,
``window_blocks=2``, seed 1. Blocks: ``0 = records [0, 2)``, ``1 = [2, 3)``, ``2 = [3, 5)``.
The slots hold blocks 0, 2, 1: window 0 holds blocks 0 and 2 (records 0, 1, 3, 4; positions
0-3), window 1 block 1 (record 2; position 4). Within window 0, positions 0-3 take the window's
records 0, 3, 2, 1: the order is records 0, 4, 3, 1, 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from schemas.permutation import ALGORITHM as _PERMUTATION
from schemas.permutation import Permutation

ALGORITHM = f"blocks-then-windows({_PERMUTATION})"
_CHUNK_SLOTS = 1 << 20  # slots mapped at once while the windows are measured


@dataclasses.dataclass(frozen=True)
class BlockShuffleSpec:
    """The shuffle's two sizes; both are recorded in the manifest's ``shuffle`` section.

    ``block_records``: neighbouring records read with one request (at most one GET per this
    many records). ``window_blocks``: blocks whose records are mixed together; a reader holds
    ``block_records * window_blocks`` records.
    """

    block_records: int = 256
    window_blocks: int = 16

    def __post_init__(self):
        for name in ("block_records", "window_blocks"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


DEFAULT_SPEC = BlockShuffleSpec()


class BlockShuffle:
    """The two-level order of a split's records: ``forward`` (position -> record),
    ``inverse`` (record -> position) and ``window_blocks_of`` (a window's blocks, in slot
    order, as (part, first record in the part, records))."""

    def __init__(self, *, starts: Sequence[int], seed: int, spec: BlockShuffleSpec):
        self.spec = spec
        self.seed = seed
        self.starts = np.asarray(starts, dtype=np.int64)  # [parts + 1]
        sizes = np.diff(self.starts)
        # block_starts[i]: part i's first block number; blocks never cross a part.
        self.block_starts = np.zeros(len(self.starts), dtype=np.int64)
        np.cumsum(-(-sizes // spec.block_records), out=self.block_starts[1:])
        self.blocks = int(self.block_starts[-1])
        self._outer = Permutation(n=self.blocks, seed=f"blocks:{seed}")
        self.window_starts = self._measure_windows()
        self._inner: tuple[int, Permutation] | None = None

    @property
    def records(self) -> int:
        return int(self.starts[-1])

    @property
    def windows(self) -> int:
        return len(self.window_starts) - 1

    def _block_extent(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Blocks -> (part, first record in the part, records)."""
        part = np.searchsorted(self.block_starts, blocks, side="right") - 1
        first = (blocks - self.block_starts[part]) * self.spec.block_records
        size = np.minimum(self.spec.block_records, self.starts[part + 1] - self.starts[part]
                          - first)
        return part, first, size

    def _measure_windows(self) -> np.ndarray:
        """Each window's first position: prefix sums of its blocks' sizes, a chunk at a time."""
        width = self.spec.window_blocks
        chunk = max(width, _CHUNK_SLOTS // width * width)
        out = [np.zeros(1, dtype=np.int64)]
        total = 0
        for at in range(0, self.blocks, chunk):
            slots = np.arange(at, min(at + chunk, self.blocks))
            sizes = self._block_extent(self._outer.forward(slots))[2]
            per_window = np.add.reduceat(sizes, np.arange(0, len(sizes), width))
            out.append(total + np.cumsum(per_window))
            total = int(out[-1][-1])
        return np.concatenate(out)

    def window_blocks_of(self, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Window ``window``'s blocks in slot order: (part, first record in it, records)."""
        width = self.spec.window_blocks
        slots = np.arange(window * width, min((window + 1) * width, self.blocks))
        return self._block_extent(self._outer.forward(slots))

    def _inner_of(self, window: int) -> Permutation:
        # The last window's permutation, kept as one immutable pair: threads sharing this
        # object (a side input) read a consistent snapshot.
        cached = self._inner
        if cached is not None and cached[0] == window:
            return cached[1]
        size = int(self.window_starts[window + 1] - self.window_starts[window])
        permutation = Permutation(n=size, seed=f"window:{self.seed}:{window}")
        self._inner = (window, permutation)
        return permutation

    def within_window(self, window: int, offsets) -> np.ndarray:
        """Offsets of positions in ``window`` -> indexes into its blocks' records."""
        return self._inner_of(window).forward(offsets)

    def forward(self, positions) -> np.ndarray:
        """Positions -> records (input numbering)."""
        positions = np.asarray(positions, dtype=np.int64).reshape(-1)
        out = np.empty_like(positions)
        window_of = np.searchsorted(self.window_starts, positions, side="right") - 1
        for window in np.unique(window_of).tolist():
            mask = window_of == window
            index = self.within_window(window, positions[mask] - self.window_starts[window])
            part, first, size = self.window_blocks_of(window)
            ends = np.cumsum(size)
            block = np.searchsorted(ends, index, side="right")
            out[mask] = (self.starts[part[block]] + first[block] + index - (ends - size)[block])
        return out

    def inverse(self, records) -> np.ndarray:
        """Records (input numbering) -> positions."""
        records = np.asarray(records, dtype=np.int64).reshape(-1)
        part = np.searchsorted(self.starts, records, side="right") - 1
        within = records - self.starts[part]
        blocks = self.block_starts[part] + within // self.spec.block_records
        slots = self._outer.inverse(blocks)
        out = np.empty_like(records)
        for i, (slot, offset) in enumerate(zip(slots.tolist(), (within % self.spec.block_records)
                                                .tolist())):
            window = slot // self.spec.window_blocks
            size = self.window_blocks_of(window)[2]
            index = int(size[:slot - window * self.spec.window_blocks].sum()) + offset
            out[i] = self.window_starts[window] + int(self._inner_of(window).inverse([index])[0])
        return out
