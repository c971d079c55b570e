"""Stage 4b, WriteShards: parts -> a shard plan -> ~``shard_bytes`` TFRecord shards.

Once every part exists, one small global step plans the shards from the parts' record counts
(``pipeline.write.shard_plan``: a pure function of the input and the options), the plans are
spread over the workers, and each shard is assembled by copying its record ranges out of the
parts, hashing as it goes, and committed atomically (``common.storage.atomic_open``: never a
partial shard visible). Shard names and bytes do not depend on the runner, the number of
workers, bundling, order or retries.
"""

from __future__ import annotations

import dataclasses
import hashlib

import apache_beam as beam

from common import storage
from common.errors import DataError
from pipeline.write.shard_plan import ShardPlan, plan_shards, records_per_shard
from schemas.records import RecordSpec, frame_bytes

_COPY_BLOCK = 8 << 20


@dataclasses.dataclass(frozen=True)
class ShardInfo:
    path: str  # relative to the dataset directory
    bytes: int
    sha256: str
    records: int
    tokens: int
    padding_tokens: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def assemble_shard(plan: ShardPlan, *, directory: str, frame_bytes: int) -> ShardInfo:
    """Copy the plan's record ranges out of the parts into one shard, committed atomically."""
    digest, size = hashlib.sha256(), 0
    with storage.atomic_open(storage.join(directory, plan.name), "wb") as out:
        for piece in plan.pieces:
            fs, path = storage.filesystem(storage.join(directory, piece.part))
            want = piece.count * frame_bytes
            with fs.open(path, "rb") as part:
                part.seek(piece.first * frame_bytes)
                left = want
                while left:
                    block = part.read(min(left, _COPY_BLOCK))
                    if not block:
                        raise DataError(
                            f"part {piece.part} ended {left} bytes early while writing "
                            f"{plan.name}; it was changed or truncated during the run: rerun")
                    out.write(block)
                    digest.update(block)
                    left -= len(block)
            size += want
    return ShardInfo(path=plan.name, bytes=size, sha256=digest.hexdigest(), records=plan.records,
                     tokens=plan.tokens, padding_tokens=plan.padding_tokens)


class _AssembleFn(beam.DoFn):
    def __init__(self, *, directory: str, frame_bytes: int):
        self._directory = directory
        self._frame_bytes = frame_bytes

    def process(self, plan: ShardPlan):
        yield assemble_shard(plan, directory=self._directory, frame_bytes=self._frame_bytes)
        beam.metrics.Metrics.counter("write", "shards").inc()


class WriteShards(beam.PTransform):
    """PCollection[PartInfo] -> PCollection[ShardInfo] (after every part is written)."""

    def __init__(self, *, directory: str, split: str, shard_bytes: int, spec: RecordSpec):
        super().__init__()
        self._directory = directory
        self._split = split
        self._spec = spec
        self._frame_bytes = frame_bytes(spec)
        self._per_shard = records_per_shard(shard_bytes=shard_bytes,
                                            frame_bytes=self._frame_bytes)

    def expand(self, parts):
        split, per_shard = self._split, self._per_shard
        seq_len, size = self._spec.seq_len, self._frame_bytes
        return (
            parts
            | "AllParts" >> beam.combiners.ToList()
            | "PlanShards" >> beam.FlatMap(lambda infos: plan_shards(
                infos, split=split, per_shard=per_shard, seq_len=seq_len, frame_bytes=size))
            | "SpreadShards" >> beam.Reshuffle()
            | "AssembleShards" >> beam.ParDo(_AssembleFn(directory=self._directory,
                                                         frame_bytes=self._frame_bytes))
        )
