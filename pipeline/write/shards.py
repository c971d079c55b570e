"""Stage 4b, WriteShards: parts -> a shard plan -> ~``shard_bytes`` TFRecord shards.

Once every part exists, one small global step plans the shards from the parts' record counts
and picks the records' order (``pipeline.write.order``: the input's, or ``--shuffle=global``'s;
a pure function of the input and the options), the plans are spread over the workers, and each
shard is assembled on its own: the order gives its records as (part, first record, count)
ranges a window (``WINDOW_BYTES``) at a time, each window's ranges are read grouped by part at
rising offsets, and the window is written in order, hashing as it goes; the shard is committed
atomically (``common.storage.atomic_open``: never a partial shard visible). Memory is one
window. Shard names and bytes do not depend on the runner, the number of workers, bundling,
order or retries.

Reads: the input's order copies whole byte ranges (one read per window). The shuffled order
reads the blocks of a window of its block shuffle (``schemas.block_shuffle``), one ranged read
(a GET on object stores) per block of ``block_records`` neighbouring records, and picks the
window's records out of them in their shuffled order: memory is one such window.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import apache_beam as beam
import numpy as np

from common import storage
from common.errors import DataError
from pipeline.write.order import InputOrder, Order, Range, Window, plan_ordered_shards
from pipeline.write.shard_plan import ShardPlan, records_per_shard
from schemas.block_shuffle import DEFAULT_SPEC, BlockShuffleSpec
from schemas.claim import NO_FENCE, Fence
from schemas.records import RecordSpec, frame_bytes

WINDOW_BYTES = 16 << 20
_OPEN_PARTS = 64  # part files kept open while a shard is assembled


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
        # Every read is exactly what is needed: no read-ahead on object stores.
        options = {"cache_type": "none"} if storage.is_object_store(fs) else {}
        handle = fs.open(stripped, "rb", **options)
        self._open[path] = handle
        if len(self._open) > _OPEN_PARTS:
            self._open.popitem(last=False)[1].close()
        return handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for handle in self._open.values():
            handle.close()
        self._open.clear()


def _read(handle, offset: int, size: int, *, part: str, shard: str) -> bytes:
    handle.seek(offset)
    data = handle.read(size)
    if len(data) == size:
        return data
    blocks, left = [data], size - len(data)
    while left:  # a file may return less than asked
        block = handle.read(left)
        if not block:
            raise DataError(f"part {part} ended {left} bytes early while writing {shard}; it was "
                            "changed or truncated during the run: rerun")
        blocks.append(block)
        left -= len(block)
    return b"".join(blocks)


def read_ranges(ranges: Sequence[Range], *, parts: _Parts, frame_bytes: int, shard: str):
    """The records of ``ranges``, concatenated in their order; read grouped by part at rising
    offsets."""
    if len(ranges) == 1:  # one whole byte range: no copy
        part, first, count = ranges[0]
        return _read(parts.get(part), first * frame_bytes, count * frame_bytes, part=part,
                     shard=shard)
    by_part: dict[str, list[tuple[int, int, int]]] = {}
    end = 0
    for part, first, count in ranges:
        by_part.setdefault(part, []).append((first, count, end))
        end += count * frame_bytes
    buffer = bytearray(end)
    for part, reads in by_part.items():
        handle = parts.get(part)
        for first, count, at in sorted(reads):
            size = count * frame_bytes
            buffer[at:at + size] = _read(handle, first * frame_bytes, size, part=part,
                                         shard=shard)
    return buffer


def window_frames(window: Window, *, parts: _Parts, frame_bytes: int, shard: str):
    """A window's frames in their order: its ranges read, then its picks taken."""
    data = read_ranges(window.ranges, parts=parts, frame_bytes=frame_bytes, shard=shard)
    if window.picks is None:
        return data
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, frame_bytes)[window.picks].tobytes()


def assemble_shard(plan: ShardPlan, *, directory: str, frame_bytes: int,
                   order: Order = InputOrder(), window_bytes: int = WINDOW_BYTES,
                   sinks: Sequence = (), fence: Fence = NO_FENCE) -> ShardInfo:
    """Write one shard: the records ``order`` puts at its positions, committed atomically.

    ``sinks``: context managers given each window's frames too (``write(frames)``), entered
    after the shard is opened and left before it is committed (another format's file of the
    same records: a format built from records, ``pipeline.write.formats.base``): an error in one
    leaves neither. ``fence``: checked before the shard is committed (``schemas.claim.Fence``).
    """
    window = max(1, window_bytes // frame_bytes)
    digest, size = hashlib.sha256(), 0
    with _Parts(directory) as parts, \
            storage.atomic_open(storage.join(directory, plan.name), "wb",
                                before_commit=fence.for_file(plan.name)) as out, \
            contextlib.ExitStack() as stack:
        others = [stack.enter_context(sink) for sink in sinks]
        for frames in order.windows(plan.pieces, window_records=window):
            data = window_frames(frames, parts=parts, frame_bytes=frame_bytes, shard=plan.name)
            out.write(data)
            digest.update(data)
            size += len(data)
            for sink in others:
                sink.write(data)
    return ShardInfo(path=plan.name, bytes=size, sha256=digest.hexdigest(), records=plan.records,
                     tokens=plan.tokens, padding_tokens=plan.padding_tokens)


class _AssembleFn(beam.DoFn):
    def __init__(self, *, directory: str, frame_bytes: int, formats: Sequence = (),
                 fence: Fence = NO_FENCE):
        self._directory = directory
        self._fence = fence
        self._frame_bytes = frame_bytes
        self._formats = tuple(formats)

    def process(self, plan: ShardPlan, order: Order):
        sinks = [fmt.shard_sink(plan) for fmt in self._formats]
        yield assemble_shard(plan, directory=self._directory, frame_bytes=self._frame_bytes,
                             order=order, sinks=sinks, fence=self._fence)
        for sink in sinks:
            yield sink.info  # the other formats' files, for the manifest
        beam.metrics.Metrics.counter("write", "shards").inc()


class WriteShards(beam.PTransform):
    """PCollection[PartInfo] -> PCollection[ShardInfo] (after every part is written); records
    in the input's order, or globally shuffled by ``shuffle_seed`` in ``shuffle``'s blocks and
    windows (``schemas.block_shuffle``). ``formats``: the formats
    built from records (``pipeline.write.formats.base.RECORDS``); each writes every shard's
    records too (its ``shard_sink``), its files (``FormatFile``) in the output as well.

    ``fence``: checked before each shard is committed (``schemas.claim.Fence``).

    The order reaches the assemblers as a side input: for a shuffle, one small object (a path
    and a number per part) instead of a copy in every shard's plan.
    """

    def __init__(self, *, directory: str, split: str, shard_bytes: int, spec: RecordSpec,
                 shuffle_seed: int | None = None,
                 shuffle: BlockShuffleSpec = DEFAULT_SPEC, formats: Sequence = (),
                 fence: Fence = NO_FENCE):
        super().__init__()
        self._directory = directory
        self._fence = fence
        self._formats = tuple(formats)
        self._split = split
        self._spec = spec
        self._seed = shuffle_seed
        self._shuffle = shuffle
        self._frame_bytes = frame_bytes(spec)
        self._per_shard = records_per_shard(shard_bytes=shard_bytes,
                                            frame_bytes=self._frame_bytes)

    def expand(self, parts):
        split, per_shard, seed, shuffle = self._split, self._per_shard, self._seed, self._shuffle
        seq_len, size = self._spec.seq_len, self._frame_bytes
        planned = (
            parts
            | "AllParts" >> beam.combiners.ToList()
            | "PlanShards" >> beam.Map(lambda infos: plan_ordered_shards(
                infos, split=split, per_shard=per_shard, seq_len=seq_len, frame_bytes=size,
                seed=seed, shuffle=shuffle))
        )
        order = planned | "Order" >> beam.Map(lambda planned: planned[0])
        return (
            planned
            | "ShardPlans" >> beam.FlatMap(lambda planned: planned[1])
            | "SpreadShards" >> beam.Reshuffle()
            | "AssembleShards" >> beam.ParDo(
                _AssembleFn(directory=self._directory, frame_bytes=size,
                            formats=self._formats, fence=self._fence),
                order=beam.pvalue.AsSingleton(order))
        )
