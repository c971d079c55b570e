"""output_dir.py: a complete dataset is refused without --overwrite; only what pilepack provably
wrote is cleared (its run record, a replaced manifest, its scratch); everything else is kept."""

import json
import pathlib
import signal
import subprocess
import sys
import uuid

import fsspec
import pytest

from common import storage
from common.errors import ConfigError
from pipeline.launch.output_dir import RUN_RECORD, finish, names_pattern, prepare
from pipeline.quality.split_doc_hashes import hash_file_path
from pipeline.write.dead_letters import dead_letter_path
from pipeline.write.formats.megatron_plan import pair_prefix
from pipeline.write.shard_plan import shard_name
from schemas import arrayrecord
from schemas.manifest import MANIFEST_NAME
from schemas.megatron_index import BIN_SUFFIX, IDX_SUFFIX

# What an interrupted run of split "train" leaves behind.
LEFTOVERS = ["train-00000-of-00002.tfrecord", "dead_letters/train-00003.jsonl",
             f"{storage.TMP_MARKER}0123abcd-train-00001-of-00002.tfrecord",
             f"{storage.TMP_MARKER}0123abcd-{MANIFEST_NAME}", ".parts/00000-0000000.tfrecords",
             ".quality/00000.drops", "doc_hashes/a.bin", f"doc_hashes/{storage.TMP_MARKER}0-3.bin",
             "train-00001-of-00002.array_record", "megatron/train-00000-of-00003.bin",
             "megatron/train-00002-of-00003.idx",
             f"megatron/{storage.TMP_MARKER}0123abcd-train-00001-of-00003.bin"]
# Pilepack's scratch: removed even without a record.
SCRATCH = [name for name in LEFTOVERS if storage.TMP_MARKER in name or name[0] == "."]
# Never pilepack's: a user's TFRecords (a common name pattern), notes, another split's files.
KEPT = ["notes.txt", "tokenizer/spm.model", "data-00000-of-00010.tfrecord",
        "val-00000-of-00001.tfrecord", "data-00000-of-00010.array_record",
        "megatron/data-00000-of-00002.bin", "megatron/val-00000-of-00001.idx"]


def _fill(root, names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _record(root) -> dict:
    return json.loads((root / RUN_RECORD).read_text())


def test_a_new_directory_is_created_with_the_run_record(tmp_path):
    out = tmp_path / "a" / "b"
    prepare(str(out), overwrite=False, split="b", run_id="r1")
    assert _files(out) == [RUN_RECORD]
    assert _record(out) == {"run_id": "r1", "splits": ["b"], "files": [], "foreign": []}
    finish(str(out))
    assert _files(out) == []


def test_a_complete_dataset_is_refused_without_overwrite(tmp_path):
    _fill(tmp_path, [MANIFEST_NAME, "train-00000-of-00001.tfrecord"])
    with pytest.raises(ValueError, match="--overwrite") as err:
        prepare(str(tmp_path), overwrite=False, split="train")
    assert str(tmp_path) in str(err.value) and MANIFEST_NAME in str(err.value)
    assert _files(tmp_path) == sorted([MANIFEST_NAME, "train-00000-of-00001.tfrecord"])


def test_overwrite_removes_the_manifest_and_the_files_it_lists(tmp_path):
    listed = [name for name in LEFTOVERS if name not in SCRATCH]
    _fill(tmp_path, [*LEFTOVERS, *KEPT])
    pair = {"prefix": "megatron/train-00000-of-00003", "bin": {"path": listed[4]},
            "idx": {"path": listed[5]}}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({
        "split": "train", "shards": [{"path": listed[0]}], "dead_letters": [{"path": listed[1]}],
        "doc_hashes": {"files": [{"path": listed[2]}]},
        "arrayrecord": {"files": [{"path": listed[3]}]}, "megatron": {"files": [pair]}}))
    prepare(str(tmp_path) + "/", overwrite=True, split="other")
    assert _files(tmp_path) == sorted([*KEPT, RUN_RECORD])
    assert _record(tmp_path)["files"] == sorted(listed)


def test_leftovers_an_interrupted_run_recorded_are_removed(tmp_path):
    _fill(tmp_path, [*LEFTOVERS, *KEPT])
    (tmp_path / RUN_RECORD).write_text(json.dumps({"run_id": "old", "splits": ["train"]}))
    prepare(str(tmp_path), overwrite=False, split="train", run_id="new")
    assert _files(tmp_path) == sorted([*KEPT, RUN_RECORD])
    assert _record(tmp_path)["run_id"] == "new" and _record(tmp_path)["splits"] == ["train"]


def test_without_a_record_only_pilepacks_scratch_is_removed(tmp_path):
    _fill(tmp_path, [*SCRATCH, *KEPT])
    prepare(str(tmp_path), overwrite=False, split="train")
    assert _files(tmp_path) == sorted([*KEPT, RUN_RECORD])


def test_files_named_like_the_splits_that_no_run_wrote_are_refused_untouched(tmp_path):
    """A user's ``train-00000-of-00001.tfrecord`` is exactly a shard's name: the run would
    overwrite it. Unrecorded leftovers of split "train" could be anyone's too."""
    _fill(tmp_path, ["train-00000-of-00001.tfrecord", *KEPT])
    with pytest.raises(ConfigError, match=r"holds train-00000-of-00001\.tfrecord: named like "
                                          r"the files split 'train' writes.*move or rename.*--overwrite"):
        prepare(str(tmp_path), overwrite=False, split="train")
    _fill(tmp_path, LEFTOVERS)
    with pytest.raises(ConfigError, match=r"dead_letters/train-00003\.jsonl.* and 2 more"):
        prepare(str(tmp_path), overwrite=False, split="train")
    assert _files(tmp_path) == sorted(["train-00000-of-00001.tfrecord", *LEFTOVERS, *KEPT])
    prepare(str(tmp_path), overwrite=True, split="train")  # --overwrite: the user gives them up
    assert RUN_RECORD in _files(tmp_path)


def test_a_users_files_named_like_the_split_are_refused_even_if_recorded_foreign(tmp_path):
    users = ["data-00000-of-00010.array_record", "data-00000-of-00010.tfrecord",
             "data-00009-of-00010.tfrecord", "megatron/data-00000-of-00002.bin",
             "megatron/data-00000-of-00002.idx"]
    _fill(tmp_path, users)
    with pytest.raises(ConfigError, match="data-00000-of-00010.array_record, "):
        prepare(str(tmp_path), overwrite=False, split="data")
    assert _files(tmp_path) == users
    # A record of an earlier pilepack, which kept such files as "foreign" and ran on.
    (tmp_path / RUN_RECORD).write_text(json.dumps({"run_id": "old", "splits": ["data"],
                                                   "foreign": users}))
    with pytest.raises(ConfigError, match="megatron/data-00000-of-00002.idx: named like"):
        prepare(str(tmp_path), overwrite=False, split="data")
    prepare(str(tmp_path), overwrite=False, split="other")  # another split's files: no clash
    assert _files(tmp_path) == sorted([*users, RUN_RECORD])


def test_fsspec_url():
    fs = fsspec.filesystem("memory")
    root = f"/output-{uuid.uuid4().hex}"
    fs.pipe({f"{root}/{MANIFEST_NAME}": b'{"shards": [{"path": "t-00000-of-00001.tfrecord"}]}',
             f"{root}/t-00000-of-00001.tfrecord": b"x", f"{root}/notes.txt": b"x"})
    try:
        with pytest.raises(ValueError, match="--overwrite"):
            prepare(f"memory://{root}", overwrite=False, split="t")
        prepare(f"memory://{root}", overwrite=True, split="t")
        assert sorted(p.rsplit("/", 1)[1] for p in fs.find(root)) == [RUN_RECORD, "notes.txt"]
    finally:
        fs.rm(root, recursive=True)


def test_files_the_pipeline_did_not_write_are_kept(tmp_path):
    # An input corpus (or anything else) under --output is never a "leftover".
    (tmp_path / RUN_RECORD).write_text(json.dumps({"run_id": "old", "splits": ["train"]}))
    for name in ("corpus/00.jsonl", "corpus/deep/keep.jsonl", "notes.jsonl",
                 "deep/train-00000-of-00001.tfrecord", "train-00000-00000.tfrecord",
                 "dead_letters/other-00000.jsonl", "doc_hashes/notes.bin",
                 "megatron/train-00000-00000.bin", "megatron/train-00000-of-00001.txt",
                 "deep/megatron/train-00000-of-00001.bin", "train-00000-of-00001.array_record.1"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    prepare(str(tmp_path), overwrite=False, split="train")
    assert _files(tmp_path) == sorted([
        "corpus/00.jsonl", "corpus/deep/keep.jsonl", "deep/train-00000-of-00001.tfrecord",
        "notes.jsonl", "train-00000-00000.tfrecord", "dead_letters/other-00000.jsonl",
        "doc_hashes/notes.bin", "megatron/train-00000-00000.bin",
        "megatron/train-00000-of-00001.txt", "deep/megatron/train-00000-of-00001.bin",
        "train-00000-of-00001.array_record.1", RUN_RECORD])


def test_the_names_the_writers_use_are_recognised():
    shard = shard_name(split="a-b", index=3, count=12)
    prefix = pair_prefix(split="a-b", index=0, count=2)
    written = [shard, arrayrecord.file_name(shard), prefix + BIN_SUFFIX, prefix + IDX_SUFFIX,
               dead_letter_path(split="a-b", file_index=7), hash_file_path(10)]
    assert [bool(names_pattern(["a-b"]).match(name)) for name in written] == [True] * 6
    assert not any(names_pattern(["a"]).match(name) for name in written[:5])



# A refused launcher, in a process of its own: each attempt writes its temporary claim file in
# --output, fails to link it, and removes it. (Its file can go first, removed by prepare; then
# its link fails: this launcher's own error, not the run's.)
_REFUSED_LAUNCHER = """
import sys
from common import compare_and_swap
print("ready", flush=True)
while True:
    try:
        assert not compare_and_swap.create_exclusive(sys.argv[1], b"another run")
    except FileNotFoundError:
        pass
"""


def test_a_temporary_file_that_vanishes_while_prepare_runs_is_no_error(tmp_path):
    """A refused launcher's temporary claim file (``.inprogress-*``) comes and goes in
    --output while the run holding the claim prepares it: listed, then gone before removal."""
    from common import compare_and_swap
    from schemas.claim import claim_path

    claim = claim_path(str(tmp_path))
    assert compare_and_swap.create_exclusive(claim, b"held by this run")
    racer = subprocess.Popen([sys.executable, "-c", _REFUSED_LAUNCHER, claim],
                             cwd=pathlib.Path(__file__).parents[3], stdout=subprocess.PIPE)
    try:
        assert racer.stdout.readline() == b"ready\n"
        for _ in range(500):
            prepare(str(tmp_path), overwrite=False, split="train")
    finally:
        racer.kill()
        racer.wait()
    assert racer.returncode == -signal.SIGKILL  # it ran, refused, to the end
    prepare(str(tmp_path), overwrite=False, split="train")  # the racer's last file, if any
    assert _files(tmp_path) == sorted([RUN_RECORD, claim.rsplit("/", 1)[1]])


def test_with_resume_a_dead_runs_committed_work_is_kept_but_its_temporary_files(tmp_path):
    committed = [".parts/00000-0000000.tfrecords", ".parts/committed/00000-0000000.read",
                 ".quality/00000.drops", ".quality/committed.json"]
    temporary = [f".parts/{storage.TMP_MARKER}0-00000-0000001.tfrecords",
                 f".parts/committed/{storage.TMP_MARKER}0-00000-0000001.read"]
    _fill(tmp_path, [*committed, *temporary, *KEPT])
    prepare(str(tmp_path), overwrite=False, split="train", resume=True)
    assert _files(tmp_path) == sorted([*committed, *KEPT, RUN_RECORD])
    prepare(str(tmp_path), overwrite=False, split="train", resume=False)  # --no-resume
    assert _files(tmp_path) == sorted([*KEPT, RUN_RECORD])
