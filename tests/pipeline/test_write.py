"""write.py: size rollover, atomic commit, sha256, and read-back by plain TensorFlow."""

import hashlib
import os

import numpy as np
import tensorflow as tf

from pipeline.write import ShardWriter, serialize_records, shard_name
from schemas.records import RecordSpec
from schemas.records_tf import parse_records


def _write(tmp_path, records, spec, *, shard_bytes, with_segments=False):
    features = {"tokens": records}
    if with_segments:
        features["segment_ids"] = np.ones_like(records)
        features["positions"] = np.tile(np.arange(records.shape[1], dtype=records.dtype),
                                         (len(records), 1))
    writer = ShardWriter(directory=str(tmp_path), split="train", file_index=3,
                         shard_bytes=shard_bytes)
    for frame, tokens, padding in serialize_records(features, spec, pad_id=0):
        writer.write(frame, tokens=tokens, padding=padding)
    writer.close()
    return writer.finished


def test_shards_roll_over_by_size_and_parse_with_tensorflow(tmp_path):
    spec = RecordSpec(seq_len=63, token_dtype="uint16")
    records = np.arange(1, 1 + 100 * 64, dtype=np.uint16).reshape(100, 64) % 60000 + 4
    records[-1, 10:] = 0  # a padded final record
    infos = _write(tmp_path, records, spec, shard_bytes=4096)
    frame = 12 + 4 + len(next(serialize_records({"tokens": records[:1]}, spec, pad_id=0))[0]) - 16
    assert all(info.bytes <= 4096 for info in infos)
    assert all(info.bytes > 4096 - frame for info in infos[:-1])  # full but for one record
    assert [info.path for info in infos[:2]] == [shard_name(split="train", file_index=3,
                                                            shard_index=i) for i in range(2)]
    assert sum(info.records for info in infos) == 100
    assert sum(info.padding_tokens for info in infos) == 54
    assert sum(info.tokens for info in infos) == 99 * 63 + 9
    assert sorted(os.listdir(tmp_path)) == [info.path for info in infos]  # no temp files left
    for info in infos:
        data = open(tmp_path / info.path, "rb").read()
        assert hashlib.sha256(data).hexdigest() == info.sha256 and len(data) == info.bytes
    # Plain TensorFlow, feature spec only: FixedLenFeature string + decode_raw little endian.
    paths = [str(tmp_path / info.path) for info in infos]
    parsed = []
    for raw in tf.data.TFRecordDataset(paths):
        example = tf.io.parse_single_example(raw, {"tokens": tf.io.FixedLenFeature([], tf.string)})
        parsed.append(tf.io.decode_raw(example["tokens"], tf.uint16, little_endian=True).numpy())
    assert np.array_equal(np.stack(parsed), records)


def test_segments_round_trip_through_parse_records(tmp_path):
    spec = RecordSpec(seq_len=7, token_dtype="int32", with_segments=True)
    records = np.arange(16 * 8, dtype=np.int32).reshape(16, 8) + 70000
    infos = _write(tmp_path, records, spec, shard_bytes=1 << 20, with_segments=True)
    dataset = tf.data.TFRecordDataset([str(tmp_path / infos[0].path)]).batch(16)
    batch = parse_records(next(iter(dataset)), spec)
    assert np.array_equal(batch["tokens"].numpy(), records.astype(np.int64))
    assert batch["positions"].numpy()[3].tolist() == list(range(8))
    assert set(np.unique(batch["segment_ids"].numpy())) == {1}


def test_abort_leaves_no_visible_shard(tmp_path):
    spec = RecordSpec(seq_len=3, token_dtype="uint16")
    writer = ShardWriter(directory=str(tmp_path), split="s", file_index=0, shard_bytes=1 << 20)
    frame, tokens, padding = next(serialize_records({"tokens": np.ones((1, 4), np.uint16) * 5},
                                                    spec, pad_id=0))
    writer.write(frame, tokens=tokens, padding=padding)
    writer.abort()
    assert os.listdir(tmp_path) == []
