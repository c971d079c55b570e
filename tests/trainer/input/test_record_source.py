"""trainer/input/record_source.py: global records map to shard offsets; neighbours share a read."""

import numpy as np
import pytest

from trainer.input.record_source import RecordSource


@pytest.fixture
def shards(tmp_path):
    """Shards of 3, 2 and 4 records of 10 bytes; every byte of global record g is g."""
    paths, g = [], 0
    for index, count in enumerate([3, 2, 4]):
        path = tmp_path / f"s{index}"
        path.write_bytes(bytes(np.repeat(np.arange(g, g + count, dtype=np.uint8), 10)))
        paths.append(str(path))
        g += count
    return paths


def test_the_docstring_example(shards):
    source = RecordSource(paths=shards, counts=[3, 2, 4], frame_bytes=10)
    runs = source.runs(np.array([7, 3, 4, 1]))
    assert [(run.shard, run.first, run.rows.tolist()) for run in runs] == [
        (0, 1, [3]), (1, 0, [1, 2]), (2, 2, [0])]
    frames = source.read(np.array([7, 3, 4, 1, 3]))
    assert frames[:, 0].tolist() == [7, 3, 4, 1, 3] and (frames == frames[:, :1]).all()
    assert source.name(7) == f"{shards[2]} record 2 (global 7)"


def test_a_short_shard_is_named(shards):
    source = RecordSource(paths=shards, counts=[3, 2, 5], frame_bytes=10)
    with pytest.raises(ValueError, match="shorter than the manifest says"):
        source.read(np.array([9]))
    with pytest.raises(ValueError, match=r"records must be in \[0, 10\)"):
        source.read(np.array([10]))


def test_a_file_system_that_refuses_mmap_gets_ranged_reads(shards, monkeypatch, caplog):
    import mmap

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")

    monkeypatch.setattr(mmap, "mmap", refuse)
    source = RecordSource(paths=shards, counts=[3, 2, 4], frame_bytes=10)
    frames = source.read(np.array([7, 3, 4, 1]))
    assert frames[:, 0].tolist() == [7, 3, 4, 1] and not source.local
    assert "cannot be memory-mapped" in caplog.text
