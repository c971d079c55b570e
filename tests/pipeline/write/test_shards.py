"""parts.py + shards.py, in the input's order and globally shuffled: parts, a plan, shards of one
size, atomic commit, sha256, read-back by plain TensorFlow, every record once in the order's
order with its padding counted, and shards that do not depend on bundling or order."""

import hashlib
import os
import random

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf

from pipeline.write.order import plan_ordered_shards
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.shard_plan import records_per_shard
from pipeline.write.shards import WriteShards, assemble_shard
from schemas.block_shuffle import BlockShuffle, BlockShuffleSpec
from schemas.records import RecordSpec, frame_bytes, frame_examples, iter_tfrecord_frames
from schemas.records_tf import parse_records

ORDERS = pytest.mark.parametrize("seed", [None, 0], ids=["input_order", "shuffled"])
SMALL = BlockShuffleSpec(block_records=3, window_blocks=2)  # several blocks and windows a shard


def _chunk(file_index, chunk_index, records, *, with_segments=False, epoch=0):
    features = {"tokens": records}
    if with_segments:
        features["segment_ids"] = np.ones_like(records)
        features["positions"] = np.tile(np.arange(records.shape[1], dtype=records.dtype),
                                        (len(records), 1))
    return PackedChunk(file_index, chunk_index, features, PackStats(), {}, epoch=epoch)


def _write(tmp_path, chunks, spec, *, shard_bytes, split="train", seed=None, window_bytes=None):
    parts = [write_part(c, directory=str(tmp_path), spec=spec, pad_id=0) for c in chunks]
    size = frame_bytes(spec)
    order, plans = plan_ordered_shards(
        parts, split=split, seq_len=spec.seq_len, frame_bytes=size, seed=seed, shuffle=SMALL,
        per_shard=records_per_shard(shard_bytes=shard_bytes, frame_bytes=size))
    window = {"window_bytes": window_bytes} if window_bytes else {}
    return [assemble_shard(plan, directory=str(tmp_path), frame_bytes=size, order=order, **window)
            for plan in plans]


def _records(n, seq_len=63):
    return np.arange(1, 1 + n * (seq_len + 1), dtype=np.uint16).reshape(n, seq_len + 1) % 60000 + 4


@ORDERS
def test_shards_hold_one_size_and_parse_with_tensorflow(tmp_path, seed):
    spec = RecordSpec(seq_len=63, token_dtype="uint16")
    records = _records(100)
    records[59, 10:] = 0  # the padded final record of the first chunk
    records[-1, 20:] = 0  # and of the second
    chunks = [_chunk(0, 0, records[:60]), _chunk(1, 0, records[60:])]
    infos = _write(tmp_path, chunks, spec, shard_bytes=4096, seed=seed)
    frame = len(frame_examples({"tokens": records[:1]}, spec))
    assert frame == frame_bytes(spec)
    assert all(info.bytes <= 4096 for info in infos)
    assert all(info.bytes > 4096 - frame for info in infos[:-1])  # full but for one record
    assert [info.path for info in infos[:2]] == [f"train-0000{i}-of-{len(infos):05d}.tfrecord"
                                                 for i in range(2)]
    assert sum(info.records for info in infos) == 100
    assert sum(info.padding_tokens for info in infos) == 54 + 44
    assert sum(info.tokens for info in infos) == 98 * 63 + 9 + 19
    for info in infos:
        data = open(tmp_path / info.path, "rb").read()
        assert hashlib.sha256(data).hexdigest() == info.sha256 and len(data) == info.bytes
    # Plain TensorFlow, feature spec only: FixedLenFeature string + decode_raw little endian.
    paths = [str(tmp_path / info.path) for info in infos]
    parsed = []
    for raw in tf.data.TFRecordDataset(paths):
        example = tf.io.parse_single_example(raw, {"tokens": tf.io.FixedLenFeature([], tf.string)})
        parsed.append(tf.io.decode_raw(example["tokens"], tf.uint16, little_endian=True).numpy())
    order = np.arange(100) if seed is None else BlockShuffle(
        starts=[0, 60, 100], seed=seed, spec=SMALL).forward(np.arange(100))
    assert np.array_equal(np.stack(parsed), records[order])  # across parts


def _numbered_parts():
    """Parts of 5, 0, 7 and 4 records (epochs 0 and 1); every record's tokens are its number;
    the last record of the 7-record part holds 3 padding tokens (pad id 0)."""
    chunks, number = [], 1
    for epoch, file_index, records in ((0, 0, 5), (0, 1, 0), (0, 2, 7), (1, 0, 4)):
        rows = np.arange(number, number + records, dtype=np.uint16)[:, None].repeat(8, axis=1)
        if records == 7:
            rows[-1, -3:] = 0
        number += records
        chunks.append(_chunk(file_index, 0, rows, epoch=epoch))
    return chunks


def _numbers(tmp_path, infos):
    """The record numbers, shard after shard."""
    numbers = []
    for info in infos:
        with open(tmp_path / info.path, "rb") as handle:
            payloads = list(iter_tfrecord_frames(handle))
        assert len(payloads) == info.records
        numbers += [int(np.frombuffer(p[-16:], dtype="<u2")[0]) for p in payloads]
    return numbers


@ORDERS
@pytest.mark.parametrize("window_records", [1, 2, 1000])
def test_every_record_once_in_the_orders_order_with_its_padding(tmp_path, seed, window_records):
    spec = RecordSpec(seq_len=7, token_dtype="uint16")
    infos = _write(tmp_path, _numbered_parts(), spec, shard_bytes=5 * frame_bytes(spec),
                   split="s", seed=seed, window_bytes=window_records * frame_bytes(spec))
    assert [(i.path, i.records) for i in infos] == [
        ("s-00000-of-00004.tfrecord", 5), ("s-00001-of-00004.tfrecord", 5),
        ("s-00002-of-00004.tfrecord", 5), ("s-00003-of-00004.tfrecord", 1)]
    # The input's order: epoch 0 files 0, 2 (records 1-12), then epoch 1 (13-16).
    order = np.arange(16) if seed is None else BlockShuffle(
        starts=[0, 5, 5, 12, 16], seed=seed, spec=SMALL).forward(np.arange(16))
    assert _numbers(tmp_path, infos) == (order + 1).tolist()
    padded = [i for i in infos if i.padding_tokens]
    assert len(padded) == 1 and padded[0].padding_tokens == 3
    assert padded[0].path == infos[int(np.flatnonzero(order == 11)[0]) // 5].path
    assert sum(i.tokens for i in infos) == 16 * 7 - 3
    for info in infos:
        data = (tmp_path / info.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == info.sha256 and len(data) == info.bytes


def test_shuffled_shards_are_one_order_per_seed(tmp_path):
    spec = RecordSpec(seq_len=7, token_dtype="uint16")
    numbers = {seed: _numbers(tmp_path / str(seed), _write(
        tmp_path / str(seed), _numbered_parts(), spec, shard_bytes=5 * frame_bytes(spec),
        seed=seed)) for seed in (0, 1)}
    assert sorted(numbers[0]) == sorted(numbers[1]) == list(range(1, 17))
    assert numbers[0] != numbers[1]


def test_segments_round_trip_through_parse_records(tmp_path):
    spec = RecordSpec(seq_len=7, token_dtype="int32", with_segments=True)
    records = np.arange(16 * 8, dtype=np.int32).reshape(16, 8) + 70000
    infos = _write(tmp_path, [_chunk(0, 0, records, with_segments=True)], spec,
                   shard_bytes=1 << 20)
    dataset = tf.data.TFRecordDataset([str(tmp_path / infos[0].path)]).batch(16)
    batch = parse_records(next(iter(dataset)), spec)
    assert np.array_equal(batch["tokens"].numpy(), records.astype(np.int64))
    assert batch["positions"].numpy()[3].tolist() == list(range(8))
    assert set(np.unique(batch["segment_ids"].numpy())) == {1}


@ORDERS
def test_a_failed_assembly_leaves_no_visible_shard(tmp_path, seed):
    spec = RecordSpec(seq_len=3, token_dtype="uint16")
    part = write_part(_chunk(0, 0, np.ones((4, 4), np.uint16) * 5), directory=str(tmp_path),
                      spec=spec, pad_id=0)
    size = frame_bytes(spec)
    order, (plan,) = plan_ordered_shards([part], split="s", per_shard=8, seq_len=3,
                                         frame_bytes=size, seed=seed)
    (tmp_path / part.path).write_bytes(b"\0" * (size * 2))  # the part lost two records
    with pytest.raises(ValueError, match=f"part {part.path} ended .* bytes early"):
        assemble_shard(plan, directory=str(tmp_path), frame_bytes=size, order=order)
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tfrecord")] == []


@ORDERS
def test_shards_do_not_depend_on_bundling_or_order(tmp_path, seed):
    """The same chunks, fed in different orders, bundles and worker counts: identical shards."""
    spec = RecordSpec(seq_len=15, token_dtype="uint16")
    rng = np.random.default_rng(0)
    chunks = [_chunk(f, c, rng.integers(4, 300, size=(int(rng.integers(1, 9)), 16))
                     .astype(np.uint16)) for f in range(3) for c in range(4)]
    results = []
    for attempt, feed in enumerate((1, 2, 3)):
        fed = chunks[:]
        random.Random(feed).shuffle(fed)
        out = tmp_path / f"run{attempt}"
        options = beam.options.pipeline_options.PipelineOptions(
            ["--direct_num_workers=2", "--direct_running_mode=multi_threading"] if feed == 3
            else [])
        with beam.Pipeline(options=options) as p:
            parts = (p | beam.Create(fed, reshuffle=True)
                     | beam.Map(write_part, directory=str(out), spec=spec, pad_id=0))
            _ = parts | WriteShards(directory=str(out), split="t", shard_bytes=1000, spec=spec,
                                    shuffle_seed=seed, shuffle=SMALL)
        shards = sorted(name for name in os.listdir(out) if name.endswith(".tfrecord"))
        results.append({name: (out / name).read_bytes() for name in shards})
    assert results[0] == results[1] == results[2]
    assert len(results[0]) > 3
    sizes = [len(data) for _, data in sorted(results[0].items())]
    assert all(size == sizes[0] for size in sizes[:-1])
