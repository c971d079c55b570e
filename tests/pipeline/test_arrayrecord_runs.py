"""--formats=tfrecord,arrayrecord end to end: one ArrayRecord file per shard, listed in the
manifest; with --shuffle=global, byte-identical under one process and two worker processes;
every record, read at random by Grain's ArrayRecordDataSource, equal to the TFRecord's at the
same index; verify and roundtrip check the files and name a corrupt one."""

import pathlib
import shutil
import sys

import pytest

from common.errors import ConfigError
from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import run
from pipeline import verify as verify_command
from pipeline.dataset import arrayrecord_check, roundtrip, verify
from schemas import manifest
from schemas.arrayrecord import decode_record
from schemas.records import iter_tfrecord_frames
from tests.pipeline.conftest import tiny_text
from tests.robustness.helpers import comparable

SMALL = ["--seq_len=16", "--shard_bytes=65536", "--chunk_bytes=4000", "--encode_processes=1",
         "--split=train", "--formats=tfrecord,arrayrecord"]
TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]


@pytest.fixture(scope="module")
def one_file(tmp_path_factory) -> pathlib.Path:
    docs = [pile_doc(f"{i}: " + tiny_text(2000 + i, 60 + i % 90), ("A", "B")[i % 2])
            for i in range(200)]
    return pathlib.Path(write_jsonl_zst(tmp_path_factory.mktemp("ar") / "00.jsonl.zst", docs,
                                        frames=2))


def _files(directory: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def _check_records_with_grain(directory: pathlib.Path, doc: dict) -> int:
    import grain.python as grain

    spec = manifest.load(str(directory)).record_spec
    checked = 0
    for entry in doc["arrayrecord"]["files"]:
        with open(directory / entry["shard"], "rb") as handle:
            expected = list(iter_tfrecord_frames(handle))
        source = grain.ArrayRecordDataSource([str(directory / entry["path"])])
        assert len(source) == len(expected) == entry["records"]
        for i in reversed(range(len(source))):  # random access, last record first
            assert source[i] == expected[i]
        assert decode_record(source[0], spec)["tokens"].shape == (17,)
        checked += len(source)
    return checked


def test_one_and_two_workers_write_the_same_arrayrecord_files(one_file, tiny_model, tmp_path):
    common = ["--input", str(one_file), "--tokenizer_model", str(tiny_model), "--shuffle=global",
              *SMALL]
    assert run.main([*common, "--output", str(tmp_path / "one"), "--runner=DirectRunner"]) == 0
    assert run.main([*common, "--output", str(tmp_path / "two"), *TWO_WORKERS]) == 0
    one, two = manifest.load(str(tmp_path / "one")).doc, manifest.load(str(tmp_path / "two")).doc
    assert comparable(two) == comparable(one)
    assert {k: one["shuffle"][k] for k in ("mode", "block_records", "window_blocks")} == {
        "mode": "global", "block_records": 256, "window_blocks": 16}  # the defaults, recorded
    files = _files(tmp_path / "one")
    assert _files(tmp_path / "two") == files
    arrayrecords = sorted(p for p in files if p.endswith(".array_record"))
    assert len(arrayrecords) == len(one["shards"]) >= 3
    assert [f["path"] for f in one["arrayrecord"]["files"]] == arrayrecords
    assert _check_records_with_grain(tmp_path / "one", one) == one["totals"]["records"]


@pytest.fixture(scope="module")
def written(one_file, tiny_model, tmp_path_factory) -> pathlib.Path:
    """A split with ArrayRecord files (tests change copies of it)."""
    out = tmp_path_factory.mktemp("ar-out") / "out"
    assert run.main(["--input", str(one_file), "--tokenizer_model", str(tiny_model), *SMALL,
                     "--output", str(out), "--runner=DirectRunner"]) == 0
    return out


def test_verify_and_roundtrip_check_the_files(written, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(written, out)
    report = verify.verify(str(out))
    assert report.ok and not report.notes, (report.problems, report.notes)
    result = roundtrip.check(str(out))
    assert result.documents == 200 and not result.mismatches

    doc = manifest.load(str(out)).doc
    entry = doc["arrayrecord"]["files"][1]
    (out / entry["path"]).write_bytes(b"")  # a truncated copy
    problems = verify.verify(str(out)).problems
    assert problems[0] == f"{entry['path']}: 0 bytes, manifest says {entry['bytes']}"
    assert problems[1].startswith(f"{entry['path']}: sha256 ") and len(problems) == 2
    assert roundtrip.check(str(out)).mismatches == problems
    (out / entry["path"]).unlink()
    assert verify.verify(str(out)).problems == [f"{entry['path']}: missing"]


def test_a_damaged_shard_is_one_problem_not_a_traceback(written, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(written, out)
    shard = manifest.load(str(out)).doc["arrayrecord"]["files"][0]["shard"]
    data = (out / shard).read_bytes()
    (out / shard).write_bytes(data + data)  # records appended: more than its ArrayRecord file
    assert arrayrecord_check.check_files(manifest.load(str(out), check_files=False)) == []
    problems = verify.verify(str(out)).problems
    assert problems and all(p.startswith(f"{shard}: ") for p in problems), problems
    (out / shard).write_bytes(data[:-5])  # truncated inside its last record
    problems = verify.verify(str(out)).problems
    assert problems[0].startswith(f"{shard}: truncated TFRecord payload"), problems
    assert all(p.startswith(f"{shard}: ") for p in problems), problems
    # Compared anyway (roundtrip's call): one line naming the ArrayRecord file.
    entry = manifest.load(str(out), check_files=False).doc["arrayrecord"]["files"][0]
    assert arrayrecord_check.check_files(manifest.load(str(out), check_files=False)) == [
        f"{entry['path']}: cannot be compared with its shard {shard}: ValueError: "
        f"{problems[0].split(': ', 1)[1]}"]


def test_checking_without_the_array_record_package_names_the_extra(written, monkeypatch,
                                                                   capsys):
    monkeypatch.setitem(sys.modules, "array_record.python.array_record_module", None)
    with pytest.raises(ConfigError, match=r"pip install 'pilepack\[arrayrecord\]'"):
        verify.verify(str(written))
    assert verify_command.main(["--manifest", str(written)]) == 2
    assert capsys.readouterr().err.startswith("error: checking a dataset written with ")
