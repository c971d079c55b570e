"""Per-rank ``tf.data`` input from a pilepack manifest: shard, read, shuffle, batch, parse.

Training's ``--order=files`` and evaluation; the default ``--order=global`` is
``trainer.input.global_order``.

Worked example (``plan_input``): 5 shards of 10, 10, 10, 10, 4 records, 2 pipelines, a
per-replica batch of 4. Pipeline 0 reads shards 0, 2, 4 (24 records), pipeline 1 shards 1, 3
(20 records); both yield min(24, 20) // 4 = 5 batches an epoch, so neither waits at an
all-reduce for the other. With 8 pipelines (more than shards) every pipeline reads all
shards and keeps every 8th record (a warning says so): 44 // 8 = 5 records each, 1 batch.

The stream is a pure function of (seed, epoch, pipeline): epoch ``e`` shuffles the pipeline's
files with seed (seed, e) and permutes each window of records with a stateless seed, so a
run resumed at step ``s`` (``start_batch``) sees exactly the batches an uninterrupted run
would have seen next.
"""

from __future__ import annotations

import dataclasses
import logging

import tensorflow as tf

from common import storage
from common.errors import ConfigError
from schemas.manifest import Dataset
from schemas.records import RecordSpec, iter_tfrecord_frames
from schemas.records_tf import parse_records
from trainer.input.batches import model_inputs, per_replica_batch

log = logging.getLogger(__name__)

READ_BUFFER_BYTES = 8 << 20
MAX_PARALLEL_FILES = 16


@dataclasses.dataclass(frozen=True)
class InputPlan:
    """What one input pipeline reads.

    Attributes:
        files: the shard paths this pipeline reads, in manifest order.
        record_shard: (num_pipelines, pipeline_id) when sharding records instead of files.
        per_replica_batch: records per batch.
        batches_per_epoch: batches per epoch, identical on every pipeline, a multiple of
            ``replicas_per_pipeline``.
        replicas_per_pipeline: batches one training step takes from this pipeline.
        pipeline_id: index of this pipeline (decorrelates the shuffle buffers).
    """

    files: tuple[str, ...]
    record_shard: tuple[int, int] | None
    per_replica_batch: int
    batches_per_epoch: int
    replicas_per_pipeline: int = 1
    pipeline_id: int = 0


def plan_input(
    *,
    dataset: Dataset,
    num_pipelines: int,
    pipeline_id: int,
    per_replica_batch: int,
    replicas_per_pipeline: int = 1,
) -> InputPlan:
    """Split the dataset's shards between pipelines; see the module docstring's example."""
    if not 0 <= pipeline_id < num_pipelines:
        raise ValueError(f"pipeline_id {pipeline_id} is not in [0, {num_pipelines})")
    if per_replica_batch < 1:
        raise ConfigError(f"per-replica batch must be >= 1, got {per_replica_batch}")
    paths, records = dataset.shard_paths(), [shard["records"] for shard in dataset.shards]
    if num_pipelines <= len(paths):
        files = tuple(paths[pipeline_id::num_pipelines])
        record_shard = None
        smallest = min(sum(records[p::num_pipelines]) for p in range(num_pipelines))
    else:
        log.warning(
            "%s: %d shards for %d input pipelines; every pipeline reads every shard and keeps "
            "every %d-th record (slower: write more, smaller shards)",
            dataset.manifest_path,
            len(paths),
            num_pipelines,
            num_pipelines,
        )
        files = tuple(paths)
        record_shard = (num_pipelines, pipeline_id)
        smallest = sum(records) // num_pipelines
    batches = smallest // per_replica_batch
    batches -= batches % replicas_per_pipeline
    if batches == 0:
        raise ConfigError(
            f"{dataset.manifest_path}: {sum(records)} records give an input pipeline only "
            f"{smallest}, fewer than one step needs ({per_replica_batch * replicas_per_pipeline}); "
            "lower --global_batch_size or use a larger dataset"
        )
    return InputPlan(
        files=files,
        record_shard=record_shard,
        per_replica_batch=per_replica_batch,
        batches_per_epoch=batches,
        replicas_per_pipeline=replicas_per_pipeline,
        pipeline_id=pipeline_id,
    )


def _scheme(path: str) -> str:
    return path.split("://", 1)[0] if "://" in path else ""


def _tf_can_read(path: str) -> bool:
    return _scheme(path) in tf.io.gfile.get_registered_schemes()


def _fsspec_frames(path: bytes):
    fs, stripped = storage.filesystem(path.decode())
    with fs.open(stripped, "rb", block_size=READ_BUFFER_BYTES) as handle:
        yield from iter_tfrecord_frames(handle)


def read_records(path: tf.Tensor, *, native: bool) -> tf.data.Dataset:
    """Serialized records of one shard: TensorFlow's reader, or fsspec (``s3://``) otherwise."""
    if native:
        return tf.data.TFRecordDataset(path, buffer_size=READ_BUFFER_BYTES)
    return tf.data.Dataset.from_generator(
        _fsspec_frames, args=(path,), output_signature=tf.TensorSpec([], tf.string)
    )


def to_model_inputs(serialized: tf.Tensor, *, spec: RecordSpec, use_segments: bool) -> tuple:
    """A batch of serialized records -> ({tokens[, segment_ids, positions]}, labels), (B, T)."""
    return model_inputs(parse_records(serialized, spec), use_segments=use_segments)


def _shuffled_batches(
    records: tf.data.Dataset,
    *,
    batch: int,
    window: int,
    seed: int,
    epoch: tf.Tensor,
    pipeline_id: int,
) -> tf.data.Dataset:
    """Batches of ``batch`` records, shuffled within windows of ~``window`` records.

    Each window (a multiple of ``batch``) is permuted with a stateless seed (seed, pipeline,
    epoch, window index) and cut into batches. Unlike ``Dataset.shuffle``, whose seed must be a
    Python int and mixes in TensorFlow's global seed, the order is a pure function of these
    arguments, so it differs per epoch and is reproduced exactly on resume; cutting whole
    windows into batches also costs one element per batch instead of one per record.
    Records left over after an epoch's last full batch are dropped, as with
    ``batch(drop_remainder=True)``.
    """
    window = max(window // batch, 1) * batch
    stream = tf.constant(seed, tf.int64) * 1_000_003 + 1 + pipeline_id  # != the files' (seed, e)

    def shuffle_and_cut(index, records_in_window):
        shuffled = tf.random.experimental.stateless_shuffle(
            records_in_window, seed=tf.stack([stream, epoch * (1 << 31) + index])
        )
        full = tf.shape(shuffled)[0] // batch * batch
        return tf.reshape(shuffled[:full], [-1, batch])  # (window / batch, batch)

    return records.batch(window).enumerate().map(shuffle_and_cut).unbatch()


def _read_shards(order: tf.Tensor, *, plan: InputPlan) -> tf.data.Dataset:
    """The records of the shards ``order`` lists (a permutation of ``plan.files``), interleaved
    deterministically; with ``plan.record_shard``, only this pipeline's share of them."""
    native = all(_tf_can_read(path) for path in plan.files)
    local = all(_scheme(path) in ("", "file") for path in plan.files)
    # Local (and mounted) files: interleave in one thread, which halves the per-record cost;
    # object stores: read files in parallel to hide request latency.
    parallel_reads = None if local else tf.data.AUTOTUNE
    records = tf.data.Dataset.from_tensor_slices(order).interleave(
        lambda path: read_records(path, native=native),
        cycle_length=min(len(plan.files), MAX_PARALLEL_FILES),
        num_parallel_calls=parallel_reads,
        deterministic=True if parallel_reads else None,
    )
    if plan.record_shard:
        records = records.shard(*plan.record_shard)
    return records


def make_dataset(
    *,
    plan: InputPlan,
    spec: RecordSpec,
    seed: int,
    shuffle_buffer: int = 10_000,
    shuffle: bool = True,
    repeat: bool = True,
    start_batch: int = 0,
    use_segments: bool = False,
) -> tf.data.Dataset:
    """The batches of one input pipeline, starting after ``start_batch`` batches.

    Args:
        plan: from ``plan_input``.
        spec: the manifest's record spec (``Dataset.record_spec``).
        seed: the run's seed; the order is a pure function of (seed, epoch, pipeline).
        shuffle_buffer: records per shuffled window, rounded down to whole batches (0 or
            ``shuffle=False``: file order).
        shuffle: shuffle files and records (training) or not (evaluation).
        repeat: cycle epochs forever (training) or stop after one (evaluation).
        start_batch: batches to skip (resume); skipped batches are read but not parsed.
        use_segments: also yield segment ids and positions (document-boundary masking).
    """
    files = tf.constant(plan.files)

    def epoch(e):
        order = files
        if shuffle:
            order = tf.random.experimental.stateless_shuffle(files, seed=tf.stack([seed, e]))
        records = _read_shards(order, plan=plan)
        if shuffle and shuffle_buffer > 1:
            batches = _shuffled_batches(
                records,
                batch=plan.per_replica_batch,
                window=shuffle_buffer,
                seed=seed,
                epoch=e,
                pipeline_id=plan.pipeline_id,
            )
        else:
            batches = records.batch(plan.per_replica_batch, drop_remainder=True)
        return batches.take(plan.batches_per_epoch)

    first_epoch, skip = divmod(start_batch, plan.batches_per_epoch)
    epochs = (
        tf.data.Dataset.counter(first_epoch)
        if repeat
        else tf.data.Dataset.range(first_epoch, first_epoch + 1)
    )
    serialized = epochs.flat_map(epoch).skip(skip)  # batch first, then parse: one call per batch
    parsed = serialized.map(
        lambda batch: to_model_inputs(batch, spec=spec, use_segments=use_segments),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return parsed.prefetch(tf.data.AUTOTUNE)


def plan_for_context(
    *, dataset: Dataset, context: tf.distribute.InputContext, global_batch_size: int
) -> InputPlan:
    """``plan_input`` for the pipeline a ``tf.distribute.InputContext`` describes."""
    return plan_input(
        dataset=dataset,
        num_pipelines=context.num_input_pipelines,
        pipeline_id=context.input_pipeline_id,
        per_replica_batch=per_replica_batch(context, global_batch_size=global_batch_size),
        replicas_per_pipeline=context.num_replicas_in_sync // context.num_input_pipelines,
    )


def steps_per_epoch(
    *, dataset: Dataset, global_batch_size: int, num_pipelines: int, num_replicas: int
) -> int:
    """Global steps in one epoch (the same on every pipeline)."""
    context = tf.distribute.InputContext(num_pipelines, 0, num_replicas)
    plan = plan_for_context(dataset=dataset, context=context, global_batch_size=global_batch_size)
    return plan.batches_per_epoch // plan.replicas_per_pipeline
