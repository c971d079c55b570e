"""output_dir.py: a complete dataset is refused without --overwrite; leftovers are cleared."""

import uuid

import fsspec
import pytest

from common import storage
from pipeline.launch.output_dir import prepare
from schemas.manifest import MANIFEST_NAME

# What an interrupted run leaves behind, and what prepare() must not touch.
LEFTOVERS = ["train-00000-00000.tfrecord", "dead_letters/train-00003.jsonl",
             f"{storage.TMP_MARKER}0123abcd-train-00001-00000.tfrecord",
             f"{storage.TMP_MARKER}0123abcd-{MANIFEST_NAME}",
             ".quality/00000.drops", "doc_hashes/a.bin", f"doc_hashes/{storage.TMP_MARKER}0-3.bin"]
KEPT = ["notes.txt", "tokenizer/spm.model"]


def _fill(root, names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_new_directory_is_created(tmp_path):
    out = tmp_path / "a" / "b"
    prepare(str(out), overwrite=False)
    assert out.is_dir() and _files(out) == []


def test_a_complete_dataset_is_refused_without_overwrite(tmp_path):
    _fill(tmp_path, [MANIFEST_NAME, "train-00000-00000.tfrecord"])
    with pytest.raises(ValueError, match="--overwrite") as err:
        prepare(str(tmp_path), overwrite=False)
    assert str(tmp_path) in str(err.value) and MANIFEST_NAME in str(err.value)
    assert _files(tmp_path) == sorted([MANIFEST_NAME, "train-00000-00000.tfrecord"])


def test_overwrite_removes_the_manifest_and_the_shards(tmp_path):
    _fill(tmp_path, [MANIFEST_NAME, *LEFTOVERS, *KEPT])
    prepare(str(tmp_path) + "/", overwrite=True)
    assert _files(tmp_path) == sorted(KEPT)


def test_leftovers_of_an_interrupted_run_are_removed(tmp_path):
    _fill(tmp_path, [*LEFTOVERS, *KEPT])
    prepare(str(tmp_path), overwrite=False)
    assert _files(tmp_path) == sorted(KEPT)


def test_fsspec_url():
    fs = fsspec.filesystem("memory")
    root = f"/output-{uuid.uuid4().hex}"
    fs.pipe({f"{root}/{MANIFEST_NAME}": b"{}", f"{root}/t-00000-00000.tfrecord": b"x",
             f"{root}/notes.txt": b"x"})
    try:
        with pytest.raises(ValueError, match="--overwrite"):
            prepare(f"memory://{root}", overwrite=False)
        prepare(f"memory://{root}", overwrite=True)
        assert [p.rsplit("/", 1)[1] for p in fs.find(root)] == ["notes.txt"]
    finally:
        fs.rm(root, recursive=True)


def test_files_the_pipeline_did_not_write_are_kept(tmp_path):
    # An input corpus (or anything else) under --output is never a "leftover".
    for name in ("corpus/00.jsonl", "corpus/deep/keep.jsonl", "notes.jsonl",
                 "deep/train-00000-00000.tfrecord", "train-00000-00000.tfrecord",
                 "dead_letters/train-00000.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    prepare(str(tmp_path), overwrite=False)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["corpus/00.jsonl", "corpus/deep/keep.jsonl", "deep/train-00000-00000.tfrecord",
                    "notes.jsonl"]
