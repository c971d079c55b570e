"""trainer/global_order.py: the same records reach the same step for any number of ranks."""

import os

import fsspec
import numpy as np
import pytest
import tensorflow as tf

from datagen.datasets import write_dataset
from schemas import manifest
from schemas.records import SEGMENT_IDS, TOKENS
from trainer.global_order import make_global_dataset, plan_global, records_at
from trainer.record_source import RecordSource

SIZES = [10, 7, 12, 9, 3]  # 41 records in uneven shards
SEQ_LEN = 4


def numbered_dataset(directory, sizes=SIZES, **kwargs):
    """Record g (in manifest order) is [4 + g % 60, 4 + g // 60, 1, 1, 1]: it names itself."""
    shards, g = [], 0
    for size in sizes:
        shards.append([np.array([4 + (g + i) % 60, 4 + (g + i) // 60] + [1] * (SEQ_LEN - 1))
                       for i in range(size)])
        g += size
    return manifest.load(write_dataset(str(directory), shards=shards, seq_len=SEQ_LEN,
                                       vocab_size=64, **kwargs))


def record_ids(tokens):
    return [int(row[0] - 4 + 60 * (row[1] - 4)) for row in tokens]


def rank_steps(data, *, ranks, replicas_per_rank=1, batch, steps, seed=3, start=0, block=1):
    """Per step, the records of the global batch: every rank's replicas' batches concatenated."""
    per_rank = []
    for rank in range(ranks):
        context = tf.distribute.InputContext(ranks, rank, ranks * replicas_per_rank)
        plan = plan_global(dataset=data, context=context, global_batch_size=batch)
        dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=seed, start=start,
                                      block=block)
        batches = [record_ids(inputs[TOKENS].numpy())
                   for inputs, _ in dataset.take(steps * replicas_per_rank)]
        per_rank.append([sum(batches[i:i + replicas_per_rank], [])
                         for i in range(0, len(batches), replicas_per_rank)])
    return [sum((rank[step] for rank in per_rank), []) for step in range(steps)]


def test_the_same_records_reach_the_same_step_on_1_2_3_4_ranks(tmp_path):
    data = numbered_dataset(tmp_path)
    reference = rank_steps(data, ranks=1, batch=12, steps=8)  # 96 records: crosses 2 epochs
    for ranks in (2, 3, 4):
        assert rank_steps(data, ranks=ranks, batch=12, steps=8) == reference, ranks
    assert rank_steps(data, ranks=2, replicas_per_rank=2, batch=12, steps=8) == reference
    stream = sum(reference, [])
    assert stream == records_at(np.arange(96), records=41, seed=3, shuffle=True).tolist()
    # one permutation per epoch: each epoch holds every record once, in a different order
    first, second = stream[:41], stream[41:82]
    assert sorted(first) == sorted(second) == list(range(41)) and first != second
    assert rank_steps(data, ranks=1, batch=12, steps=2, seed=4) != reference[:2]


def test_a_start_position_continues_the_stream_whatever_the_batch(tmp_path):
    data = numbered_dataset(tmp_path)
    stream = sum(rank_steps(data, ranks=1, batch=6, steps=12), [])
    # resumed at position 36 (after 3 steps of 12) on 3 ranks: steps 4.. of the same stream
    assert sum(rank_steps(data, ranks=3, batch=12, steps=3, start=36), []) == stream[36:72]
    # the global batch changed to 4 at position 36: the same records, cut differently
    assert sum(rank_steps(data, ranks=2, batch=4, steps=9, start=36), []) == stream[36:72]


def test_a_block_order_moves_neighbours_together_and_reads_them_at_once(tmp_path):
    stream = records_at(np.arange(20), records=10, seed=1, shuffle=True, block=4).tolist()
    for epoch in (stream[:10], stream[10:]):
        assert sorted(epoch) == list(range(10)) and epoch[8:] == [8, 9]  # the tail stays last
        assert {epoch[0] % 4, epoch[4] % 4} == {0} and epoch[:4] == list(range(epoch[0],
                                                                             epoch[0] + 4))
    assert stream[:8] != list(range(8))
    data = numbered_dataset(tmp_path)
    for ranks in (1, 2, 4):  # still the same records in every step
        assert rank_steps(data, ranks=ranks, batch=8, steps=5, block=8) == rank_steps(
            data, ranks=1, batch=8, steps=5, block=8)
    source = RecordSource(paths=data.shard_paths(), counts=SIZES, frame_bytes=1)
    block = records_at(np.arange(8, 16), records=41, seed=3, shuffle=True, block=8)
    assert len(source.runs(block)) <= 2  # one read, or two where the block spans two shards


def test_records_at_is_manifest_order_without_shuffling():
    assert records_at(np.arange(8, 13), records=10, seed=0, shuffle=False).tolist() == [
        8, 9, 0, 1, 2]


def test_labels_segments_and_an_unshuffled_read(tmp_path):
    data = numbered_dataset(tmp_path, with_segments=True)
    context = tf.distribute.InputContext(1, 0, 1)
    plan = plan_global(dataset=data, context=context, global_batch_size=4)
    dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=False,
                                  use_segments=True, start=39)
    inputs, labels = next(iter(dataset))
    assert record_ids(inputs[TOKENS].numpy()) == [39, 40, 0, 1]
    np.testing.assert_array_equal(inputs[TOKENS][2], [4, 4, 1, 1])
    np.testing.assert_array_equal(labels[2], [4, 1, 1, 1])
    np.testing.assert_array_equal(inputs[SEGMENT_IDS][2], [1, 1, 1, 2])  # a new one after EOS
    assert labels.dtype == tf.int32


def test_too_large_a_batch_names_the_flag(tmp_path):
    data = numbered_dataset(tmp_path)
    with pytest.raises(ValueError, match="--global_batch_size 42 is more than the 41"):
        plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                    global_batch_size=42)
    with pytest.raises(ValueError, match="not divisible by the 4 replicas"):
        plan_global(dataset=data, context=tf.distribute.InputContext(2, 0, 4),
                    global_batch_size=6)


def _copy(directory, put):
    for name in sorted(os.listdir(directory)):
        put(name, (directory / name).read_bytes())


def test_memory_and_s3_shards_give_the_same_steps(tmp_path, s3):
    numbered_dataset(tmp_path / "d")
    memory = fsspec.filesystem("memory")
    _copy(tmp_path / "d", lambda name, data: memory.pipe(f"/global-order/{name}", data))
    _copy(tmp_path / "d", lambda name, data: s3.put(f"global/{name}", data))
    local = rank_steps(manifest.load(str(tmp_path / "d")), ranks=2, batch=8, steps=6)
    assert rank_steps(manifest.load("memory://global-order"), ranks=2, batch=8, steps=6) == local
    assert rank_steps(manifest.load(s3.url("global/manifest.json")), ranks=2, batch=8,
                      steps=6) == local


def test_a_corrupt_record_is_named(tmp_path):
    data = numbered_dataset(tmp_path, sizes=[4])
    path = data.shard_paths()[0]
    with open(path, "r+b") as handle:  # a byte of record 2's values
        size = os.path.getsize(path) // 4
        handle.seek(2 * size + size - 8)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 1]))
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=4)
    dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=False)
    with pytest.raises(tf.errors.OpError, match=r"record 2 \(global 2\).*checksum mismatch"):
        next(iter(dataset))
