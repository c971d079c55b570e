"""``--order=global``: one sample order for any number of ranks, by ranged reads.

The split's ``N`` records, epoch after epoch, form one stream: position ``g`` holds record
``perm_e(g mod N)`` of epoch ``e = g // N``, where ``perm_e`` is a seeded bijection of
``[0, N)``: blocks of neighbouring records permuted, then the records of each window of blocks
scattered over its positions (``trainer.input.window_order``; the identity without shuffling). A
step of global batch ``B`` reads positions ``[g, g + B)``, ``g`` being the records trained on
before it (``examples_seen``, saved in every checkpoint); input pipeline ``p`` of ``P`` reads
``[g + p*B/P, g + (p+1)*B/P)`` and cuts it into its replicas' batches in replica order. So
what a step trains on depends on (seed, g, B), never on P: a run resumes on any number of
ranks with exactly the next records, and after a change of ``B`` from the same position ``g``.

Worked example: N = 10, B = 4, P = 2. The first step reads positions 0-3 (pipeline 0: 0, 1;
pipeline 1: 2, 3); the third reads positions 8-11, records perm_0(8), perm_0(9), perm_1(0),
perm_1(1): a batch may straddle two epochs, and no record is dropped.

Each pipeline reads only its records, by ranged reads at computed offsets
(``trainer.input.record_source``), a few steps per call into Python, several calls in flight;
from an object store, a windowed order fetches whole blocks and keeps them
(``trainer.input.block_cache``).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import tensorflow as tf

from common.errors import ConfigError
from schemas.manifest import Dataset
from schemas.record_frames import decode_frames, frame_layout
from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS, RecordSpec
from trainer.input.batches import model_inputs, per_replica_batch
from trainer.input.block_cache import BlockCache
from trainer.input.record_source import RecordSource
from trainer.input.window_order import records_at, window_positions

RECORDS_PER_CALL = 256  # at least, per call into Python (a whole number of steps)
PERMUTE_CHUNK = 8192  # positions permuted per vectorized call
CHUNKS_KEPT = 4  # chunks kept for calls still in flight (several are read in parallel)


@dataclasses.dataclass(frozen=True)
class GlobalPlan:
    """What one input pipeline reads under ``--order=global``.

    Attributes:
        files, counts: every shard of the split and its record count, in manifest order.
        global_batch: records per step over all pipelines.
        pipeline_id, num_pipelines: this pipeline, of how many.
        per_replica_batch: records per replica and step.
        replicas_per_pipeline: batches one step takes from this pipeline.
    """

    files: tuple[str, ...]
    counts: tuple[int, ...]
    global_batch: int
    pipeline_id: int
    num_pipelines: int
    per_replica_batch: int
    replicas_per_pipeline: int = 1

    @property
    def pipeline_batch(self) -> int:
        return self.per_replica_batch * self.replicas_per_pipeline

    def positions(self, *, start: int, steps: np.ndarray) -> np.ndarray:
        """This pipeline's stream positions (int64 [len(steps), pipeline_batch]) in the steps
        ``steps`` (0: the first step after stream position ``start``)."""
        first = start + np.asarray(steps, dtype=np.int64) * self.global_batch
        first += self.pipeline_id * self.pipeline_batch
        return first[:, None] + np.arange(self.pipeline_batch, dtype=np.int64)


def plan_global(
    *, dataset: Dataset, context: tf.distribute.InputContext, global_batch_size: int
) -> GlobalPlan:
    """The plan of the pipeline ``context`` describes."""
    counts = tuple(shard["records"] for shard in dataset.shards)
    if global_batch_size > sum(counts):
        raise ConfigError(
            f"{dataset.manifest_path}: --global_batch_size {global_batch_size} is more than the "
            f"{sum(counts)} records of the split; lower it or use a larger dataset"
        )
    return GlobalPlan(
        files=tuple(dataset.shard_paths()),
        counts=counts,
        global_batch=global_batch_size,
        pipeline_id=context.input_pipeline_id,
        num_pipelines=context.num_input_pipelines,
        per_replica_batch=per_replica_batch(context, global_batch_size=global_batch_size),
        replicas_per_pipeline=context.num_replicas_in_sync // context.num_input_pipelines,
    )


def _feature_names(*, use_segments: bool) -> tuple[str, ...]:
    return (TOKENS, SEGMENT_IDS, POSITIONS) if use_segments else (TOKENS,)


class StepReader:
    """``reader(call)`` -> (tokens[, segment_ids, positions]), each int32 [steps_per_call *
    pipeline batch, record_len]: this pipeline's records of the steps ``call * steps_per_call``
    to ``(call + 1) * steps_per_call - 1`` after stream position ``start``, step by step.

    A pure function of ``call``, safe to call from several threads. Each call reads at least
    ``RECORDS_PER_CALL`` records, since crossing from TensorFlow into Python costs about as much
    as reading a few dozen; the permutation runs vectorized over ``PERMUTE_CHUNK`` positions at a
    time (the calls that follow ask for the next ones), its cost being mostly NumPy's
    per-operation overhead.
    """

    def __init__(self, *, plan: GlobalPlan, spec: RecordSpec, seed: int, start: int,
                 shuffle: bool, block: int, window: int, use_segments: bool):
        self.plan, self.seed, self.start, self.shuffle = plan, seed, start, shuffle
        self.block, self.window = block, window
        self.layout = frame_layout(spec)
        self.source = RecordSource(paths=plan.files, counts=plan.counts,
                                   frame_bytes=self.layout.frame_bytes, random_access=shuffle)
        self.names = _feature_names(use_segments=use_segments)
        # Both at most about an epoch: a chunk spanning many epochs of a tiny split would
        # permute each of them separately.
        records = self.source.records
        self.steps_per_call = max(1, min(RECORDS_PER_CALL, records) // plan.pipeline_batch)
        call = self.steps_per_call * plan.pipeline_batch
        self._calls_per_chunk = max(1, min(PERMUTE_CHUNK, records) // call)
        self._chunks: dict[int, np.ndarray] = {}  # the few chunks made last
        self._lock = threading.Lock()
        self.reader, self.cache, self._ahead = self.source, None, 0
        if shuffle and window > 1 and block > 1 and not self.source.local:
            # a window's records scattered over its positions: fetch whole blocks, keep two
            # windows' (memory: 2 * window * block records); the next window's are fetched
            # while this one is read (calls about a window ahead)
            span = window_positions(records=records, block=block, window=window)
            self.reader = self.cache = BlockCache(source=self.source, block=block,
                                                  capacity=2 * -(-span // block))
            self._ahead = -(-span // (self.steps_per_call * plan.global_batch))
        self._prefetched = -1  # the last call whose blocks were prefetched

    def records(self, call: int) -> np.ndarray:
        """The global record indexes of ``call``, step by step (int64 [steps_per_call *
        pipeline batch])."""
        chunk, index = divmod(call, self._calls_per_chunk)
        with self._lock:
            if chunk not in self._chunks:
                first = chunk * self._calls_per_chunk * self.steps_per_call
                steps = first + np.arange(self._calls_per_chunk * self.steps_per_call)
                positions = self.plan.positions(start=self.start, steps=steps)
                self._chunks[chunk] = records_at(
                    positions, records=self.source.records, seed=self.seed,
                    shuffle=self.shuffle, block=self.block, window=self.window,
                ).reshape(self._calls_per_chunk, -1)
                while len(self._chunks) > CHUNKS_KEPT:  # the first one in is the oldest
                    del self._chunks[next(iter(self._chunks))]
            return self._chunks[chunk][index]

    def _prefetch(self, call: int) -> None:
        ahead = call + self._ahead
        with self._lock:
            if ahead <= self._prefetched:
                return
            self._prefetched = ahead
        self.cache.prefetch(lambda: self.records(ahead))

    def __call__(self, call) -> tuple:
        if self.cache is not None:
            self._prefetch(int(call))
        records = self.records(int(call))
        frames = self.reader.read(records)
        features = decode_frames(frames, self.layout,
                                 where=lambda row: self.source.name(int(records[row])))
        return tuple(features[name] for name in self.names)


def make_global_dataset(
    *,
    plan: GlobalPlan,
    spec: RecordSpec,
    seed: int,
    start: int = 0,
    shuffle: bool = True,
    block: int = 1,
    window: int = 1,
    use_segments: bool = False,
) -> tf.data.Dataset:
    """One input pipeline's per-replica batches, endlessly, from stream position ``start``.

    Args:
        plan: from ``plan_global``.
        spec: the manifest's record spec (``Dataset.record_spec``).
        seed: the run's seed; the order is a pure function of (seed, position).
        start: records trained on before the first step (``examples_seen`` when resuming).
        shuffle: a permutation per epoch (training) or manifest order.
        block, window: the two-level permutation's blocks of neighbouring records and
            window of blocks whose records it scatters (``trainer.input.window_order``).
        use_segments: also yield segment ids and positions (document-boundary masking).
    """
    read = StepReader(plan=plan, spec=spec, seed=seed, start=start, shuffle=shuffle,
                      block=block, window=window, use_segments=use_segments)
    rows = read.steps_per_call * plan.pipeline_batch
    # (steps * replicas, per-replica batch, T): unbatched into one batch per replica and step
    per_replica = [read.steps_per_call * plan.replicas_per_pipeline, plan.per_replica_batch,
                   spec.seq_len]

    def read_call(call: tf.Tensor) -> tuple:
        values = tf.numpy_function(read, [call], Tout=[tf.int32] * len(read.names),
                                   stateful=False)
        features = {}
        for name, value in zip(read.names, values):
            value.set_shape([rows, spec.record_len])
            features[name] = value
        inputs = model_inputs(features, use_segments=use_segments)  # each (rows, T)
        return tf.nest.map_structure(lambda value: tf.reshape(value, per_replica), inputs)

    calls = tf.data.Dataset.counter().map(
        read_call, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return calls.unbatch().prefetch(tf.data.AUTOTUNE)
