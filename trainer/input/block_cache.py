"""Whole blocks of records from an object store, each fetched once while its window is read.

Under ``--order=global`` with a window (``trainer.input.window_order``), the records of ``W`` blocks
of ``K`` neighbours are scattered over ``W*K`` positions, so the steps of one window ask for a
few records of every block again and again. Reading them one by one costs a request each; this
cache fetches a block the first time a call needs any of its records (one ranged request: the
block's records are neighbours in one shard, or two where it spans a shard boundary; a call's
blocks go in one concurrent ``cat_ranges``) and keeps the blocks used last.

Memory: at most ``capacity`` blocks of ``K`` framed records, plus the blocks of calls still
being gathered (a call holds on to the blocks it needs until it has copied its rows).
``trainer.input.global_order`` sizes it at two windows (``2*W*K`` records), the window being read
and the next one, which calls in flight start on.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from trainer.input.record_source import RecordSource

log = logging.getLogger(__name__)


class BlockCache:
    """``cache.read(records)``: the frames of ``records`` (uint8 [len, frame_bytes]), like
    ``RecordSource.read``, fetching whole blocks of ``block`` records (thread-safe; a block
    several calls need at once is fetched once).

    Args:
        source: reads the split's records.
        block: records per block (block ``b`` is records ``[b*block, (b+1)*block)``, the last
            one shorter when ``block`` does not divide the record count).
        capacity: blocks kept once no call needs them (the least recently used go first).
    """

    def __init__(self, *, source: RecordSource, block: int, capacity: int):
        self.source, self.block, self.capacity = source, block, max(1, capacity)
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()  # block -> its frames
        self._pending: dict[int, threading.Event] = {}  # blocks being fetched
        self._lock = threading.Lock()
        self.fetched = 0  # blocks fetched (for the benchmark's request counts)
        self._ahead = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="blocks")

    def _extent(self, index: int) -> np.ndarray:
        first = index * self.block
        return np.arange(first, min(first + self.block, self.source.records), dtype=np.int64)

    def _fetch(self, indexes: list[int]) -> None:
        """Fetch ``indexes`` (marked pending by the caller) into the cache."""
        try:
            extents = [self._extent(index) for index in indexes]
            frames = self.source.read(np.concatenate(extents))
            bounds = np.cumsum([0, *map(len, extents)])
            # each block owns its rows: a slice would keep the whole fetch alive while any
            # block of it is held, so evicting a block would free nothing
            blocks = [frames] if len(indexes) == 1 else [
                frames[start:end].copy() for start, end in zip(bounds[:-1], bounds[1:])]
            with self._lock:
                self._blocks.update(zip(indexes, blocks))
                self.fetched += len(indexes)
        finally:
            with self._lock:
                for index in indexes:
                    self._pending.pop(index).set()

    def _held(self, indexes: np.ndarray) -> dict[int, np.ndarray]:
        """The blocks ``indexes``, fetching those neither held nor being fetched."""
        while True:
            with self._lock:
                missing = [i for i in indexes.tolist()
                           if i not in self._blocks and i not in self._pending]
                waits = [self._pending[i] for i in indexes.tolist() if i in self._pending]
                for index in missing:
                    self._pending[index] = threading.Event()
            if missing:
                self._fetch(missing)
            for event in waits:
                event.wait()
            with self._lock:
                held = {i: self._blocks[i] for i in indexes.tolist() if i in self._blocks}
                for index in held:
                    self._blocks.move_to_end(index)
                while len(self._blocks) > self.capacity:  # held keeps this call's alive
                    self._blocks.popitem(last=False)
            if len(held) == len(indexes):
                return held
            # another call's fetch of a block failed (it raised there): fetch it here

    def prefetch(self, records: Callable[[], np.ndarray]) -> None:
        """Fetch the blocks of ``records()`` in the background (a later ``read`` of them waits
        for that fetch instead of starting its own); a failure is left to that ``read``."""

        def fetch():
            try:
                self._held(np.unique(records() // self.block))
            except Exception as err:  # noqa: BLE001 - the read that needs them raises it
                log.debug("prefetch failed: %s", err)

        self._ahead.submit(fetch)

    def read(self, records: np.ndarray) -> np.ndarray:
        records = np.asarray(records, dtype=np.int64)
        index, offset = np.divmod(records, self.block)
        order = np.argsort(index, kind="stable")
        cuts = np.flatnonzero(np.diff(index[order])) + 1
        groups = np.split(order, cuts) if len(records) else []
        held = self._held(np.array([index[rows[0]] for rows in groups], dtype=np.int64))
        out = np.empty((len(records), self.source.frame_bytes), dtype=np.uint8)
        for rows in groups:  # one vectorized gather per block
            out[rows] = held[int(index[rows[0]])][offset[rows]]
        return out
