"""verify.py: totals and accounting that must add up, one shard checked against its manifest
entry (written by hand), a dataset made by the real pipeline, and the command's exit codes."""

import copy
import hashlib
import json

import numpy as np
import pytest

from datagen.datasets import write_dataset
from pipeline import verify as verify_command
from pipeline.dataset import verify
from schemas import manifest as manifest_lib
from schemas.records import RecordSpec, frame_tfrecord, serialize_example

SPEC = RecordSpec(seq_len=4, token_dtype="uint16")
RECORDS = [[1, 5, 6, 7, 1], [1, 8, 1, 9, 10], [10, 11, 12, 13, 1], [1, 20, 21, 1, 0]]

# --- check_consistency -------------------------------------------------------------------------

CONSISTENT = {
    "shards": [{"bytes": 100, "records": 3, "tokens": 12, "padding_tokens": 0},
               {"bytes": 40, "records": 1, "tokens": 3, "padding_tokens": 1}],
    "totals": {"shards": 2, "bytes": 140, "records": 4, "tokens": 15, "padding_tokens": 1},
    "accounting": {"read": 10, "written": 7, "filtered": {"blank_line": 2},
                   "rejected": {"invalid_json": 1}},
    "dead_letters": [{"path": "dead_letters/train-00000.jsonl", "records": 1}],
}


def test_consistent_manifest_has_no_problem():
    assert verify.check_consistency(CONSISTENT) == []


@pytest.mark.parametrize("key, value, actual", [
    ("shards", 3, 2), ("bytes", 141, 140), ("records", 5, 4), ("tokens", 14, 15),
    ("padding_tokens", 0, 1),
])
def test_each_hand_edited_total_is_caught(key, value, actual):
    doc = copy.deepcopy(CONSISTENT)
    doc["totals"][key] = value
    assert verify.check_consistency(doc) == [
        f"manifest: totals.{key} is {value}, its shards add up to {actual}"]


def test_accounting_that_does_not_add_up_is_caught():
    doc = copy.deepcopy(CONSISTENT)
    doc["accounting"]["read"] = 11
    assert verify.check_consistency(doc) == [
        "manifest: accounting does not add up: read 11 != written 7 + filtered 2 + rejected 1"]


def test_rejected_records_without_their_dead_letters_are_caught():
    doc = copy.deepcopy(CONSISTENT)
    doc["dead_letters"][0]["records"] = 2
    assert verify.check_consistency(doc) == [
        "manifest: 1 rejected records but 2 dead letters listed"]


# --- check_shard, on a shard written by hand ---------------------------------------------------


@pytest.fixture
def shard(tmp_path):
    """4 records of seq_len 4 framed by hand; returns (path, manifest entry, frame size)."""
    frames = [frame_tfrecord(serialize_example({"tokens": np.array(r, dtype=np.uint16)}, SPEC))
              for r in RECORDS]
    assert len({len(f) for f in frames}) == 1  # fixed-size records: same frame size
    data = b"".join(frames)
    path = tmp_path / "s.tfrecord"
    path.write_bytes(data)
    entry = {"path": "s.tfrecord", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
             "records": 4, "tokens": 15, "padding_tokens": 1}
    return path, entry, len(frames[0])


def test_an_intact_shard_has_no_problem(shard):
    path, entry, _ = shard
    assert verify.check_shard(str(path), entry) == ([], 4)


@pytest.mark.parametrize("field, value, problem", [
    ("bytes", 1, "s.tfrecord: {bytes} bytes, manifest says 1"),
    ("sha256", "0" * 64, "s.tfrecord: sha256 {sha256} does not match the manifest"),
    ("records", 5, "s.tfrecord: 4 records, manifest says 5"),
])
def test_a_manifest_entry_that_disagrees_is_named(shard, field, value, problem):
    path, entry, _ = shard
    expected = problem.format(**entry)
    assert verify.check_shard(str(path), dict(entry, **{field: value})) == ([expected], 4)


def test_a_flipped_byte_is_a_crc_problem(shard):
    path, entry, frame = shard
    data = bytearray(path.read_bytes())
    data[2 * frame + 20] ^= 0x01  # inside the third record's payload
    path.write_bytes(bytes(data))
    problems, records = verify.check_shard(str(path), entry)
    assert records == 2  # the two records before the damaged one
    assert problems[0] == (f"s.tfrecord: TFRecord data checksum mismatch in the record at byte "
                           f"{2 * frame}")
    assert problems[1].startswith("s.tfrecord: sha256 ")
    assert len(problems) == 2  # no record-count complaint on top of a framing problem


def test_a_missing_shard(tmp_path):
    assert verify.check_shard(str(tmp_path / "gone.tfrecord"), {"path": "gone.tfrecord"}) == (
        ["gone.tfrecord: missing"], 0)


# --- deep checks, on a hand-written dataset ------------------------------------------------------


def _dataset(tmp_path, records):
    path = write_dataset(str(tmp_path / "d"), seq_len=4, vocab_size=300,
                         shards=[[np.array(r, dtype=np.uint16) for r in records]])
    dataset = manifest_lib.load(path)
    return dataset, dataset.shard_paths()[0], dataset.shards[0]


def test_deep_counts_tokens_and_padding(tmp_path, monkeypatch):
    monkeypatch.setattr(verify, "_BATCH", 3)  # two batches: records 0..2, then 3
    dataset, path, entry = _dataset(tmp_path, RECORDS)
    assert (entry["tokens"], entry["padding_tokens"]) == (15, 1)
    assert verify.check_shard(path, entry, deep=verify._DeepCheck(dataset)) == ([], 4)
    wrong = dict(entry, tokens=16)
    assert verify.check_shard(path, wrong, deep=verify._DeepCheck(dataset)) == (
        [f"{entry['path']}: 15 tokens / 1 padding, manifest says 16 / 1"], 4)


def test_deep_finds_an_id_outside_the_vocabulary(tmp_path, monkeypatch):
    monkeypatch.setattr(verify, "_BATCH", 3)
    dataset, path, entry = _dataset(tmp_path, RECORDS[:3] + [[1, 20, 300, 1, 0]])
    assert verify.check_shard(path, entry) == ([], 4)  # framing and hashes are fine
    assert verify.check_shard(path, entry, deep=verify._DeepCheck(dataset)) == (
        [f"{entry['path']}: a token id outside [0, 300) in records from 3"], 4)


# --- a dataset made by the pipeline --------------------------------------------------------------


def test_the_pipeline_dataset_verifies_with_nothing_to_note(tiny_dataset):
    doc = manifest_lib.load(str(tiny_dataset)).doc
    assert doc["dead_letters"] and doc["accounting"]["rejected"] == {"invalid_json": 1}
    for deep in (False, True):
        report = verify.verify(str(tiny_dataset), deep=deep)
        assert (report.problems, report.notes) == ([], [])
        assert (report.shards, report.records) == (len(doc["shards"]),
                                                  doc["totals"]["records"])


def test_dead_letter_files_are_checked(dataset_copy):
    letters = dataset_copy / "dead_letters" / "train-00000.jsonl"
    letters.write_text(letters.read_text() + '{"reason": "extra"}\n')
    assert verify.verify(str(dataset_copy)).problems == [
        "dead_letters/train-00000.jsonl: 2 records, manifest says 1"]
    letters.unlink()
    assert verify.verify(str(dataset_copy)).problems == ["dead_letters/train-00000.jsonl: missing"]


def test_unlisted_files_are_notes_not_problems(dataset_copy):
    (dataset_copy / "notes.txt").write_text("mine")
    (dataset_copy / "dead_letters" / "old-00009.jsonl").write_text("{}\n")
    report = verify.verify(str(dataset_copy))
    assert report.ok
    assert report.notes == [
        "dead_letters/old-00009.jsonl: not listed in the manifest (leftover of another run?)",
        "notes.txt: not listed in the manifest (leftover of another run?)",
    ]


# --- the command -------------------------------------------------------------------------------


def test_exit_0_when_clean(dataset_copy, capsys):
    doc = json.loads((dataset_copy / "manifest.json").read_text())
    assert verify_command.main(["--manifest", str(dataset_copy / "manifest.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"OK: {len(doc['shards'])} shards, {doc['totals']['records']} records checked")


def test_exit_1_naming_each_problem(dataset_copy, capsys):
    (dataset_copy / "dead_letters" / "train-00000.jsonl").unlink()
    (dataset_copy / "stray.bin").write_bytes(b"x")
    assert verify_command.main(["--manifest", str(dataset_copy)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "NOTE stray.bin: not listed in the manifest (leftover of another run?)"
    assert lines[1] == "PROBLEM dead_letters/train-00000.jsonl: missing"
    assert lines[2].startswith("1 PROBLEM(S): ")


def test_exit_2_when_there_is_no_usable_manifest(tmp_path, capsys):
    assert verify_command.main(["--manifest", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no manifest here" in err and len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as exit_info:
        verify_command.main(["--manifest", str(tmp_path), "--depp"])
    assert exit_info.value.code == 2
    assert "--depp (did you mean --deep?)" in capsys.readouterr().err
