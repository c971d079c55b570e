import logging
import os

import fsspec
import numpy as np
import pytest

from datagen.datasets import random_records, shard_tagged_dataset, write_dataset
from schemas import manifest
from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS
from trainer.input.files import make_dataset, plan_input, steps_per_epoch


def batches(dataset, count=None):
    out = []
    for inputs, labels in dataset.take(count) if count else dataset:
        out.append((inputs[TOKENS].numpy(), labels.numpy()))
    return out


def records_of(stream):
    return [tuple(row) for tokens, _ in stream for row in tokens]


def test_docstring_example(tmp_path, caplog):
    data = manifest.load(shard_tagged_dataset(str(tmp_path), records_per_shard=[10, 10, 10, 10, 4]))
    plan0 = plan_input(dataset=data, num_pipelines=2, pipeline_id=0, per_replica_batch=4)
    plan1 = plan_input(dataset=data, num_pipelines=2, pipeline_id=1, per_replica_batch=4)
    assert [os.path.basename(f)[6:11] for f in plan0.files] == ["00000", "00002", "00004"]
    assert [os.path.basename(f)[6:11] for f in plan1.files] == ["00001", "00003"]
    assert plan0.batches_per_epoch == plan1.batches_per_epoch == 5
    with caplog.at_level(logging.WARNING):
        many = plan_input(dataset=data, num_pipelines=8, pipeline_id=3, per_replica_batch=4)
    assert "5 shards for 8 input pipelines" in caplog.text
    assert (many.record_shard, many.batches_per_epoch, len(many.files)) == ((8, 3), 1, 5)


@pytest.mark.parametrize(
    "sizes,world", [([10, 7, 12, 9, 3], 2), ([10, 7, 12, 9, 3], 3), ([12, 12], 3)]
)
def test_ranks_read_disjoint_records_in_equal_batch_counts(tmp_path, sizes, world):
    data = manifest.load(shard_tagged_dataset(str(tmp_path), records_per_shard=sizes))
    seen = []
    for rank in range(world):
        plan = plan_input(dataset=data, num_pipelines=world, pipeline_id=rank, per_replica_batch=2)
        stream = batches(make_dataset(plan=plan, spec=data.record_spec, seed=1, repeat=False))
        assert len(stream) == plan.batches_per_epoch
        seen.append(records_of(stream))
    assert len({len(s) for s in seen}) == 1  # equal batch counts: nobody waits at an all-reduce
    flat = [r for s in seen for r in s]
    assert len(flat) == len(set(flat))  # disjoint


@pytest.mark.parametrize("world", [1, 2, 4])
def test_union_of_ranks_is_the_whole_dataset(tmp_path, world):
    path = shard_tagged_dataset(
        str(tmp_path), records_per_shard=[8, 8]
    )  # 4 pipelines: record sharding
    data = manifest.load(path)
    union = []
    for rank in range(world):
        plan = plan_input(dataset=data, num_pipelines=world, pipeline_id=rank, per_replica_batch=1)
        union += records_of(
            batches(make_dataset(plan=plan, spec=data.record_spec, seed=3, repeat=False))
        )
    everything = records_of(
        batches(
            make_dataset(
                plan=plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=1),
                spec=data.record_spec,
                seed=0,
                shuffle=False,
                repeat=False,
            )
        )
    )
    assert sorted(union) == sorted(everything) and len(everything) == 16


def test_inputs_and_labels_are_the_record_shifted_by_one(tmp_path):
    record = np.array([5, 6, 7, 1, 8, 9, 0, 0, 0])  # seq_len 8, two documents, padded
    data = manifest.load(
        write_dataset(
            str(tmp_path), shards=[[record]], seq_len=8, vocab_size=16, with_segments=True
        )
    )
    plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=1)
    inputs, labels = next(
        iter(make_dataset(plan=plan, spec=data.record_spec, seed=0, use_segments=True))
    )
    np.testing.assert_array_equal(inputs[TOKENS], [[5, 6, 7, 1, 8, 9, 0, 0]])
    np.testing.assert_array_equal(labels, [[6, 7, 1, 8, 9, 0, 0, 0]])
    np.testing.assert_array_equal(inputs[SEGMENT_IDS], [[1, 1, 1, 1, 2, 2, 0, 0]])
    np.testing.assert_array_equal(inputs[POSITIONS], [[0, 1, 2, 3, 0, 1, 0, 0]])
    assert labels.dtype == "int32"


def test_order_is_seeded_and_differs_per_epoch(tmp_path):
    data = manifest.load(shard_tagged_dataset(str(tmp_path), records_per_shard=[16, 16]))
    plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=4)
    spec = data.record_spec

    def epochs(seed):
        flat = records_of(
            batches(make_dataset(plan=plan, spec=spec, seed=seed, shuffle_buffer=8), 16)
        )
        return flat[:32], flat[32:]

    first, second = epochs(seed=7)
    assert sorted(first) == sorted(second) and first != second
    assert epochs(seed=7) == (first, second)
    assert epochs(seed=8)[0] != first


@pytest.mark.parametrize("start", [0, 3, 8, 13])
def test_starting_at_a_batch_continues_the_same_stream(tmp_path, start):
    data = manifest.load(shard_tagged_dataset(str(tmp_path), records_per_shard=[9, 11, 6]))
    plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=3)
    assert plan.batches_per_epoch == 8  # 26 // 3: the resumed stream crosses an epoch boundary
    full = batches(make_dataset(plan=plan, spec=data.record_spec, seed=5, shuffle_buffer=4), 20)
    resumed = batches(
        make_dataset(plan=plan, spec=data.record_spec, seed=5, shuffle_buffer=4, start_batch=start),
        20 - start,
    )
    for (a, b), (c, d) in zip(full[start:], resumed, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_fsspec_paths_read_the_same_records(tmp_path):
    local = shard_tagged_dataset(str(tmp_path / "d"), records_per_shard=[5, 6])
    memory = fsspec.filesystem("memory")
    for name in os.listdir(tmp_path / "d"):
        memory.pipe(f"/fsspec-test/{name}", (tmp_path / "d" / name).read_bytes())
    remote = manifest.load("memory://fsspec-test/manifest.json")
    streams = []
    for data in (manifest.load(local), remote):
        plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=2)
        streams.append(
            records_of(
                batches(make_dataset(plan=plan, spec=data.record_spec, seed=2, repeat=False))
            )
        )
    assert streams[0] == streams[1] and len(streams[0]) == 10


def test_too_large_a_batch_names_the_flag(tmp_path):
    data = manifest.load(
        write_dataset(
            str(tmp_path),
            shards=[random_records(np.random.default_rng(0), 3, seq_len=4, low=4, high=9)],
            seq_len=4,
            vocab_size=16,
        )
    )
    with pytest.raises(ValueError, match="--global_batch_size"):
        plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=4)
    with pytest.raises(ValueError, match="not divisible"):
        steps_per_epoch(dataset=data, global_batch_size=3, num_pipelines=1, num_replicas=2)


def test_s3_shards_stream_through_s3fs(tmp_path, s3):
    """s3:// (the moto server of tests/conftest.py): TensorFlow cannot open it, fsspec/s3fs can."""
    local = shard_tagged_dataset(str(tmp_path / "d"), records_per_shard=[5, 6, 7])
    for name in os.listdir(tmp_path / "d"):
        s3.put(f"data/{name}", (tmp_path / "d" / name).read_bytes())
    streams = []
    for data in (manifest.load(local), manifest.load(s3.url("data/manifest.json"))):
        plan = plan_input(dataset=data, num_pipelines=2, pipeline_id=1, per_replica_batch=2)
        dataset = make_dataset(plan=plan, spec=data.record_spec, seed=4, repeat=False)
        streams.append(records_of(batches(dataset)))
    assert streams[0] == streams[1] and len(streams[0]) == 6
