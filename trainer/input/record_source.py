"""Framed records of a split by global record index: ranged reads at computed offsets.

Global record ``g`` (records numbered in manifest order, shard by shard) is record
``g - starts[k]`` of the shard ``k`` with ``starts[k] <= g < starts[k + 1]`` (``starts``: the
running sum of the manifest's record counts), at byte ``(g - starts[k]) * frame_bytes`` of it,
since every record of a spec has the same framed size: no index, no scan.

Worked example: shards of 3, 2 and 4 records, frames of 10 bytes; records [7, 3, 4, 1] are
shard 2 byte 20, shard 1 bytes 0-19 (records 3 and 4 are neighbours: one read of 2 frames),
shard 0 byte 10, so three reads fill the four rows.

Local (and mounted) files are memory-mapped and the rows gathered in one vectorized copy per
shard (the kernel reads only the pages touched; ``random_access`` turns its read-ahead off;
a file system that refuses mmap is read like a remote one); other fsspec URLs (``s3://``) get
one ``cat_ranges`` call per read, one range per run of neighbouring records, which s3fs
requests concurrently.
"""

from __future__ import annotations

import dataclasses
import logging
import mmap
import threading
from collections.abc import Sequence

import numpy as np

from common import storage
from schemas.record_frames import FrameError

log = logging.getLogger(__name__)


class MmapRefused(OSError):
    """A local file the kernel will not memory-map."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One ranged read: ``len(rows)`` neighbouring records of shard ``shard`` from record
    ``first`` on, for output rows ``rows`` (in record order)."""

    shard: int
    first: int
    rows: np.ndarray


class RecordSource:
    """Reads framed records of a split's shards by global record index (thread-safe).

    Args:
        paths: the shards, in manifest order (local paths or fsspec URLs, all one kind).
        counts: each shard's record count, from the manifest.
        frame_bytes: bytes of one framed record (``schemas.records.frame_bytes``).
        random_access: reads jump around (a shuffled order): no read-ahead on local files.
    """

    def __init__(
        self,
        *,
        paths: Sequence[str],
        counts: Sequence[int],
        frame_bytes: int,
        random_access: bool = True,
    ):
        if len(paths) != len(counts) or not paths:
            raise ValueError(f"{len(paths)} paths for {len(counts)} record counts")
        self.paths = tuple(paths)
        self.starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.frame_bytes = frame_bytes
        located = [storage.filesystem(path) for path in self.paths]
        self._fs = located[0][0]
        self._stripped = [stripped for _, stripped in located]
        self.local = all(storage.is_local(fs) for fs, _ in located)
        self.random_access = random_access
        self._maps: dict[int, np.ndarray] = {}  # shard -> its frames, uint8 [records, frame_bytes]
        self._lock = threading.Lock()

    @property
    def records(self) -> int:
        return int(self.starts[-1])

    def name(self, record: int) -> str:
        """Where global record ``record`` lives, for error messages."""
        shard = int(np.searchsorted(self.starts, record, side="right")) - 1
        return f"{self.paths[shard]} record {record - self.starts[shard]} (global {record})"

    def _check(self, records: np.ndarray) -> None:
        if len(records) and not (0 <= records.min() and records.max() < self.records):
            raise ValueError(f"records must be in [0, {self.records})")

    def runs(self, records: np.ndarray) -> list[Run]:
        """The ranged reads that fetch ``records`` (see the module docstring's example)."""
        records = np.asarray(records, dtype=np.int64)
        self._check(records)
        order = np.argsort(records, kind="stable")
        ordered = records[order]
        shard = np.searchsorted(self.starts, ordered, side="right") - 1
        local = ordered - self.starts[shard]
        cuts = np.flatnonzero((np.diff(shard) != 0) | (np.diff(local) != 1)) + 1
        bounds = [0, *cuts.tolist(), len(records)]
        return [
            Run(shard=int(shard[a]), first=int(local[a]), rows=order[a:b])
            for a, b in zip(bounds[:-1], bounds[1:])
            if b > a
        ]

    def read(self, records: np.ndarray) -> np.ndarray:
        """The frames of ``records`` (uint8 [len(records), frame_bytes]), row i = records[i]."""
        records = np.asarray(records, dtype=np.int64)
        out = np.empty((len(records), self.frame_bytes), dtype=np.uint8)
        if self.local:
            try:
                self._read_mapped(records, out)
                return out
            except MmapRefused as err:
                log.warning("%s; reading its records with ranged reads instead", err)
                self.local = False
        self._read_ranges(self.runs(records), out)
        return out

    def _mapped(self, shard: int) -> np.ndarray:
        with self._lock:
            if shard not in self._maps:
                self._maps[shard] = self._map(shard)
            return self._maps[shard]

    def _map(self, shard: int) -> np.ndarray:
        want = int(self.starts[shard + 1] - self.starts[shard]) * self.frame_bytes
        with open(self._stripped[shard], "rb") as handle:
            try:
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if want else b""
            except OSError as err:  # e.g. a FUSE mount with direct I/O
                raise MmapRefused(f"{self.paths[shard]} cannot be memory-mapped ({err})") from err
        if len(mapped) < want:
            raise FrameError(f"{self.paths[shard]}: {len(mapped)} bytes, the manifest's records "
                             f"need {want} (a shard shorter than the manifest says: recopy the "
                             "dataset)")
        if want and self.random_access:
            mapped.madvise(mmap.MADV_RANDOM)
        return np.frombuffer(mapped, dtype=np.uint8, count=want).reshape(-1, self.frame_bytes)

    def _read_mapped(self, records: np.ndarray, out: np.ndarray) -> None:
        self._check(records)
        shard = np.searchsorted(self.starts, records, side="right") - 1
        local = records - self.starts[shard]
        if len(records) and shard[0] == shard[-1] and (shard == shard[0]).all():
            out[:] = self._mapped(int(shard[0]))[local]
            return
        order = np.argsort(shard, kind="stable")
        bounds = [0, *(np.flatnonzero(np.diff(shard[order])) + 1).tolist(), len(records)]
        for start, end in zip(bounds[:-1], bounds[1:]):  # one vectorized gather per shard
            rows = order[start:end]
            out[rows] = self._mapped(int(shard[rows[0]]))[local[rows]]

    def _read_ranges(self, runs: list[Run], out: np.ndarray) -> None:
        size = self.frame_bytes
        blobs = self._fs.cat_ranges(
            [self._stripped[run.shard] for run in runs],
            [run.first * size for run in runs],
            [(run.first + len(run.rows)) * size for run in runs],
            on_error="raise",
        )
        for run, blob in zip(runs, blobs):
            if len(blob) != len(run.rows) * size:
                raise FrameError(
                    f"{self.paths[run.shard]}: {len(blob)} bytes at byte {run.first * size}, "
                    f"want {len(run.rows) * size} (a shard shorter than the manifest says: "
                    "recopy the dataset)"
                )
            out[run.rows] = np.frombuffer(blob, dtype=np.uint8).reshape(len(run.rows), size)

    def close(self) -> None:
        with self._lock:
            self._maps.clear()  # the maps close once no batch refers to them
