"""pipeline/write/formats/arrayrecord.py: each shard's ArrayRecord file holds the shard's
records (the TFRecord payloads) in the shard's order, read back at random by Grain's
ArrayRecordDataSource; the file is committed atomically (local and object store), and its bytes
are the same on every run."""

import hashlib
import os
import sys

import apache_beam as beam
import fsspec
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from pipeline.write.formats.arrayrecord import (
    ArrayRecordFile,
    ArrayRecordFormat,
    ArrayRecordSink,
    payloads,
)
from pipeline.write.formats.base import WriteContext
from pipeline.write.order import plan_ordered_shards
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.shard_plan import records_per_shard
from pipeline.write.shards import WriteShards, assemble_shard
from schemas.arrayrecord import decode_records
from schemas.records import RecordSpec, frame_bytes, iter_tfrecord_frames

SPEC = RecordSpec(seq_len=63, token_dtype="uint16")
ORDERS = pytest.mark.parametrize("seed", [None, 0], ids=["input_order", "shuffled"])


def _chunks():
    records = np.arange(1, 1 + 100 * 64, dtype=np.uint16).reshape(100, 64) % 60000 + 4
    return [PackedChunk(0, 0, {"tokens": records[:60]}, PackStats(), {}),
            PackedChunk(1, 0, {"tokens": records[60:]}, PackStats(), {})]


def _format(directory) -> ArrayRecordFormat:
    return ArrayRecordFormat(WriteContext(directory=directory, split="train", shard_bytes=4096,
                                          record=SPEC, vocab_size=300))


def _assemble(directory, *, seed, window_bytes=1000):
    parts = [write_part(c, directory=directory, spec=SPEC, pad_id=0) for c in _chunks()]
    size = frame_bytes(SPEC)
    order, plans = plan_ordered_shards(
        parts, split="train", seq_len=SPEC.seq_len, frame_bytes=size, seed=seed,
        per_shard=records_per_shard(shard_bytes=4096, frame_bytes=size))
    arrayrecord = _format(directory)
    out = []
    for plan in plans:
        sink = arrayrecord.shard_sink(plan)
        shard = assemble_shard(plan, directory=directory, frame_bytes=size, order=order,
                               window_bytes=window_bytes, sinks=[sink])
        out.append((shard, sink.info))
    return out


def _tfrecords(path):
    with fsspec.open(path, "rb") as handle:
        return list(iter_tfrecord_frames(handle))


def test_payloads_are_the_frames_payloads():
    data = b"".join(c for c in [bytes(range(20)), bytes(range(20, 40))])
    assert list(payloads(data, frame_bytes=20)) == [bytes(range(12, 16)), bytes(range(32, 36))]
    with pytest.raises(ValueError, match="whole frames"):
        list(payloads(data[:-1], frame_bytes=20))


@ORDERS
def test_each_file_holds_its_shards_records_read_at_random_by_grain(tmp_path, seed):
    import grain.python as grain

    written = _assemble(str(tmp_path), seed=seed)
    assert len(written) == 5  # 100 records of 167 bytes, 24 a shard of 4096 bytes
    for shard, info in written:
        path = tmp_path / info.path
        assert info == ArrayRecordFile(
            path=shard.path.replace(".tfrecord", ".array_record"), bytes=path.stat().st_size,
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(), records=shard.records,
            shard=shard.path)
        expected = _tfrecords(str(tmp_path / shard.path))
        source = grain.ArrayRecordDataSource([str(path)])
        assert len(source) == len(expected)
        backwards = [source[i] for i in reversed(range(len(source)))]  # random access
        assert backwards[::-1] == expected
        decoded = decode_records(expected, SPEC)["tokens"]
        assert decoded.shape == (shard.records, 64)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".inprogress-")]


def test_the_bytes_do_not_depend_on_the_window(tmp_path):
    one = _assemble(str(tmp_path / "a"), seed=0, window_bytes=1)
    other = _assemble(str(tmp_path / "b"), seed=0, window_bytes=1 << 20)
    assert [info for _, info in one] == [info for _, info in other]


def test_an_object_store_gets_the_whole_file_or_nothing(tmp_path):
    directory = "memory://arrayrecord-test"
    try:
        written = _assemble(directory, seed=None)
        local = _assemble(str(tmp_path), seed=None)
        assert [info for _, info in written] == [info for _, info in local]
        fs = fsspec.filesystem("memory")
        assert fs.cat(f"/arrayrecord-test/{written[0][1].path}") == \
            (tmp_path / local[0][1].path).read_bytes()
    finally:
        fsspec.filesystem("memory").rm("/arrayrecord-test", recursive=True)


@pytest.mark.parametrize("directory", ["local", "memory://arrayrecord-failed"])
def test_an_error_leaves_no_file(tmp_path, directory):
    directory = str(tmp_path) if directory == "local" else directory
    sink = ArrayRecordSink(directory=directory, shard="t-00000-of-00001.tfrecord", records=2,
                           frame_bytes=20)
    with pytest.raises(RuntimeError, match="boom"):
        with sink:
            sink.write(bytes(20))
            raise RuntimeError("boom")
    fs, root = fsspec.core.url_to_fs(directory)
    assert sink.info is None
    assert not fs.exists(f"{root}/t-00000-of-00001.array_record")
    assert not [p for p in fs.ls(root) if ".inprogress-" in p] if fs.exists(root) else True


def test_a_missing_record_is_an_error(tmp_path):
    from common.errors import DataError

    sink = ArrayRecordSink(directory=str(tmp_path), shard="t-00000-of-00001.tfrecord",
                           records=2, frame_bytes=20)
    with pytest.raises(DataError, match="1 records written, its shard"):
        with sink:
            sink.write(bytes(20))
    assert os.listdir(tmp_path) == []


def test_write_shards_outputs_the_files(tmp_path):
    directory = str(tmp_path)
    parts = [write_part(c, directory=directory, spec=SPEC, pad_id=0) for c in _chunks()]
    with beam.Pipeline() as p:
        out = (p | beam.Create(parts)
               | WriteShards(directory=directory, split="train", shard_bytes=4096, spec=SPEC,
                             formats=(_format(directory),)))

        def check(items):
            files = sorted(i.path for i in items if isinstance(i, ArrayRecordFile))
            shards = sorted(i.path for i in items if not isinstance(i, ArrayRecordFile))
            assert files == [s.replace(".tfrecord", ".array_record") for s in shards]
            assert len(files) == 5

        assert_that(out, check)


def test_without_the_array_record_package_the_graph_is_refused(tmp_path, monkeypatch):
    from common.errors import ConfigError

    monkeypatch.setitem(sys.modules, "array_record.python.array_record_module", None)
    with pytest.raises(ConfigError, match=r"pip install 'pilepack\[arrayrecord\]'"):
        _format(str(tmp_path))
