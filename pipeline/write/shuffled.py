"""``--shuffle=global``: shards whose records are a seeded permutation of the whole split.

The parts are written exactly as without the shuffle (``pipeline.write.parts``); what changes is
how shards are cut from them. The records, in the unshuffled order (parts by their (epoch,
file, chunk) key, records within each part), are numbered ``0 .. n-1`` by prefix sums over the
parts (``PartTable``). Shard ``k`` holds shuffled positions ``[k*R, (k+1)*R)`` and position
``p`` holds record ``Permutation(n, seed).forward(p)`` (``pipeline.write.permutation``), so every shard
holds a uniform sample of the whole split, not one input file's documents in order.

Planning is one small global step, O(parts): the table and, per shard, its position range
and its padding (each padded record's shard is found with the inverse permutation). Each
shard is then assembled on its own: positions are mapped to (part, record) a window at a
time (``WINDOW_BYTES``), the window's reads are grouped by part and sorted by offset, and the
window is written in position order; memory is one window, never the permutation. Every read
is one record (``frame_bytes``) at a random offset of a part: cheap on local disks and EFS
(the page cache holds the parts), a ranged GET each on object stores.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict

import apache_beam as beam
import numpy as np

from common import storage
from common.errors import DataError
from pipeline.write.permutation import Permutation
from pipeline.write.shard_plan import PartInfo, ordered_parts, shard_name
from pipeline.write.shards import ShardInfo
from schemas.records import RecordSpec, frame_bytes

WINDOW_BYTES = 16 << 20
_OPEN_PARTS = 64  # part files kept open while a shard is assembled


@dataclasses.dataclass(frozen=True)
class PartTable:
    """The ordered parts and where each starts in the unshuffled numbering."""

    paths: tuple[str, ...]
    starts: np.ndarray  # int64 [parts + 1]: prefix sums of the parts' records
    seed: int

    @property
    def records(self) -> int:
        return int(self.starts[-1])

    def locate(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global record indexes -> (part index, record within the part)."""
        part = np.searchsorted(self.starts, records, side="right") - 1
        return part, records - self.starts[part]


@dataclasses.dataclass(frozen=True)
class ShuffledShardPlan:
    index: int
    name: str
    first: int  # shuffled positions [first, first + records)
    records: int
    tokens: int
    padding_tokens: int


def plan_shuffled_shards(parts, *, split: str, per_shard: int, seq_len: int, frame_bytes: int,
                         seed: int) -> tuple[PartTable, list[ShuffledShardPlan]]:
    """The part table and the shards' plans (names as without the shuffle)."""
    ordered: list[PartInfo] = ordered_parts(parts, frame_bytes=frame_bytes)
    starts = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([p.records for p in ordered], out=starts[1:])
    table = PartTable(paths=tuple(p.path for p in ordered), starts=starts, seed=seed)
    total = table.records
    count = -(-total // per_shard)
    padding = np.zeros(count, dtype=np.int64)
    padded = [(int(starts[i]) + record, pads) for i, part in enumerate(ordered)
              for record, pads in part.padded]
    if padded:
        positions = Permutation(n=total, seed=seed).inverse([g for g, _ in padded])
        np.add.at(padding, positions // per_shard, [pads for _, pads in padded])
    plans = []
    for k in range(count):
        records = min(per_shard, total - k * per_shard)
        plans.append(ShuffledShardPlan(
            index=k, name=shard_name(split=split, index=k, count=count), first=k * per_shard,
            records=records, tokens=records * seq_len - int(padding[k]),
            padding_tokens=int(padding[k])))
    return table, plans


class _Parts:
    """Open part files, least recently used closed first."""

    def __init__(self, directory: str):
        self._directory = directory
        self._open: OrderedDict = OrderedDict()

    def get(self, path: str):
        if path in self._open:
            self._open.move_to_end(path)
            return self._open[path]
        fs, stripped = storage.filesystem(storage.join(self._directory, path))
        # One record per read at random offsets: no read-ahead on object stores.
        options = {"cache_type": "none"} if storage.is_object_store(fs) else {}
        handle = fs.open(stripped, "rb", **options)
        self._open[path] = handle
        if len(self._open) > _OPEN_PARTS:
            self._open.popitem(last=False)[1].close()
        return handle

    def close(self):
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def assemble_shuffled_shard(plan: ShuffledShardPlan, *, table: PartTable, directory: str,
                            frame_bytes: int, window_bytes: int = WINDOW_BYTES) -> ShardInfo:
    """Write one shard: its positions' records, in position order, committed atomically."""
    permutation = Permutation(n=table.records, seed=table.seed)
    window = max(1, window_bytes // frame_bytes)
    digest, parts = hashlib.sha256(), _Parts(directory)
    try:
        with storage.atomic_open(storage.join(directory, plan.name), "wb") as out:
            for start in range(plan.first, plan.first + plan.records, window):
                stop = min(start + window, plan.first + plan.records)
                part, record = table.locate(permutation.forward(np.arange(start, stop)))
                buffer = bytearray((stop - start) * frame_bytes)
                for slot in np.lexsort((record, part)):  # grouped by part, rising offsets
                    handle = parts.get(table.paths[part[slot]])
                    handle.seek(int(record[slot]) * frame_bytes)
                    frame = handle.read(frame_bytes)
                    if len(frame) != frame_bytes:
                        raise DataError(f"part {table.paths[part[slot]]} ended early while "
                                        f"writing {plan.name}; it was changed or truncated "
                                        "during the run: rerun")
                    buffer[slot * frame_bytes:(slot + 1) * frame_bytes] = frame
                out.write(buffer)
                digest.update(buffer)
    finally:
        parts.close()
    return ShardInfo(path=plan.name, bytes=plan.records * frame_bytes,
                     sha256=digest.hexdigest(), records=plan.records, tokens=plan.tokens,
                     padding_tokens=plan.padding_tokens)


class _AssembleShuffledFn(beam.DoFn):
    def __init__(self, *, directory: str, frame_bytes: int):
        self._directory = directory
        self._frame_bytes = frame_bytes

    def process(self, plan: ShuffledShardPlan, table: PartTable):
        yield assemble_shuffled_shard(plan, table=table, directory=self._directory,
                                      frame_bytes=self._frame_bytes)
        beam.metrics.Metrics.counter("write", "shards").inc()


class WriteShuffledShards(beam.PTransform):
    """PCollection[PartInfo] -> PCollection[ShardInfo], records globally shuffled by ``seed``.

    The part table reaches the assemblers as a side input: one small object (a path and a
    number per part) instead of a copy in every shard's plan.
    """

    def __init__(self, *, directory: str, split: str, shard_bytes: int, spec: RecordSpec,
                 seed: int):
        super().__init__()
        from pipeline.write.shard_plan import records_per_shard

        self._directory = directory
        self._split = split
        self._spec = spec
        self._seed = seed
        self._frame_bytes = frame_bytes(spec)
        self._per_shard = records_per_shard(shard_bytes=shard_bytes,
                                            frame_bytes=self._frame_bytes)

    def expand(self, parts):
        split, per_shard, seed = self._split, self._per_shard, self._seed
        seq_len, size = self._spec.seq_len, self._frame_bytes
        planned = (
            parts
            | "AllParts" >> beam.combiners.ToList()
            | "PlanShuffledShards" >> beam.Map(lambda infos: plan_shuffled_shards(
                infos, split=split, per_shard=per_shard, seq_len=seq_len, frame_bytes=size,
                seed=seed))
        )
        table = planned | "PartTable" >> beam.Map(lambda planned: planned[0])
        return (
            planned
            | "ShardPlans" >> beam.FlatMap(lambda planned: planned[1])
            | "SpreadShards" >> beam.Reshuffle()
            | "AssembleShards" >> beam.ParDo(
                _AssembleShuffledFn(directory=self._directory, frame_bytes=size),
                table=beam.pvalue.AsSingleton(table))
        )
