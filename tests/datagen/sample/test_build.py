"""Tests for datagen/sample/build.py: the default sample's contents, determinism, refusals."""

from __future__ import annotations

import json
import os

import pytest
import zstandard

from datagen.pile_files import read_records, read_zst, zst_frames
from datagen.sample import build as sample_build
from datagen.sample.files import SampleFiles, pile_line

SMALL = 300_000  # total_bytes for the quick builds


def _dir_bytes(path: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out[name] = f.read()
    return out


@pytest.fixture(scope="module")
def default_sample(tmp_path_factory) -> SampleFiles:
    return sample_build.build_sample(out_dir=str(tmp_path_factory.mktemp("default")))


# --- the default sample ---------------------------------------------------------------------


def test_default_sample_size_is_near_target(default_sample):
    assert 0.95 * 4_000_000 <= default_sample.json_bytes <= 4_000_000
    assert 500_000 <= default_sample.compressed_bytes <= 2_000_000
    for path in (*default_sample.train_paths, default_sample.val_path):
        assert os.path.getsize(path) == default_sample.file_bytes[os.path.basename(path)]


def test_default_sample_file_names(default_sample):
    assert default_sample.train_files == ("train-00.jsonl.zst", "train-01.jsonl.zst")
    assert default_sample.val_file == "val.jsonl.zst"
    assert default_sample.train_paths + [default_sample.val_path] == [
        os.path.join(default_sample.out_dir, name)
        for name in ("train-00.jsonl.zst", "train-01.jsonl.zst", "val.jsonl.zst")
    ]
    assert sorted(os.listdir(default_sample.out_dir)) == [
        "sample_info.json",
        "train-00.jsonl.zst",
        "train-01.jsonl.zst",
        "val.jsonl.zst",
    ]


def test_every_line_is_a_pile_record_serialized_like_the_pile(default_sample):
    json_bytes = 0
    for path in (*default_sample.train_paths, default_sample.val_path):
        name = os.path.basename(path)
        data = read_zst(path)
        json_bytes += len(data)
        assert data.endswith(b"\n")
        lines = data.split(b"\n")[:-1]
        assert len(lines) == default_sample.doc_counts[name]
        per_subset = dict.fromkeys(sample_build.SUBSET_ORDER, 0)
        for line in lines:
            record = json.loads(line)
            assert list(record) == ["text", "meta"]
            assert list(record["meta"]) == ["pile_set_name"]
            assert isinstance(record["text"], str) and record["text"].strip()
            assert line + b"\n" == pile_line(
                text=record["text"], subset=record["meta"]["pile_set_name"]
            )
            assert line.isascii()  # json.dumps' default ensure_ascii=True, as in the Pile
            per_subset[record["meta"]["pile_set_name"]] += 1
        assert per_subset == default_sample.file_subset_counts[name]
    assert json_bytes == default_sample.json_bytes


def test_files_are_single_streamed_frames_without_content_size(default_sample):
    for path in (*default_sample.train_paths, default_sample.val_path):
        with open(path, "rb") as f:
            data = f.read()
        params = zstandard.get_frame_parameters(data)
        assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
        assert len(zst_frames(data)) == 1


def test_subsets_are_present_and_interleaved(default_sample):
    counts = default_sample.subset_counts
    assert {"Github", "StackExchange", "Wikipedia (en)", "Pile-CC"} <= {
        subset for subset, n in counts.items() if n > 0
    }
    for name in default_sample.train_files:
        path = os.path.join(default_sample.out_dir, name)
        subsets = [r["meta"]["pile_set_name"] for r in read_records(path)]
        assert len(set(subsets[:40])) >= 3, "train files should be shuffled across subsets"
        assert abs(len(subsets) - default_sample.num_docs * 0.45) < 0.1 * default_sample.num_docs


def test_val_holds_about_a_tenth_of_every_subset(default_sample):
    val = default_sample.file_subset_counts["val.jsonl.zst"]
    assert 0.07 <= sum(val.values()) / default_sample.num_docs <= 0.11
    for subset, total in default_sample.subset_counts.items():
        assert val[subset] == total // 10  # every 10th selected document of each subset


# --- determinism, refusals ------------------------------------------------------------------


def test_build_is_byte_identical_across_runs(tmp_path):
    a = sample_build.build_sample(out_dir=str(tmp_path / "a"), total_bytes=SMALL)
    b = sample_build.build_sample(out_dir=str(tmp_path / "b"), total_bytes=SMALL)
    assert _dir_bytes(a.out_dir) == _dir_bytes(b.out_dir)
    assert a.json_bytes <= SMALL
    assert a.json_bytes >= 0.9 * SMALL


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"total_bytes": 0}, "total_bytes must be an int >= 1"),
        ({"total_bytes": 2_000}, "too small"),
        ({"num_train_files": 0}, "num_train_files"),
        ({"num_train_files": 101}, "num_train_files must be <= 100"),
        ({"val_every": 1}, "val_every"),
    ],
)
def test_bad_parameters_are_refused(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sample_build.build_sample(out_dir=str(tmp_path / "out"), **kwargs)


def test_stale_train_files_from_another_build_are_refused(tmp_path):
    out_dir = str(tmp_path / "out")
    sample_build.build_sample(out_dir=out_dir, total_bytes=SMALL, num_train_files=3)
    with pytest.raises(ValueError, match="train-02.jsonl.zst"):
        sample_build.build_sample(out_dir=out_dir, total_bytes=SMALL, num_train_files=2)
