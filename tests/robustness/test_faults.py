"""Faults: a run killed mid-write, then rerun; ``pipeline.verify`` against damaged datasets."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from common import storage
from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.dataset import verify
from tests.robustness.helpers import (
    REPO,
    child_env,
    comparable,
    load,
    python_module,
    run_inprocess,
    text,
)

KILL_ARGS = ["--seq_len=64", "--shard_bytes=65536", "--chunk_bytes=200000"]


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    """~20 MB of text in three files: a few hundred 64 KiB shards, seconds of writing."""
    root = tmp_path_factory.mktemp("kill-in")
    base = [text(70000 + i, 1500) for i in range(200)]
    docs = [pile_doc(f"{i}: {base[i % len(base)]}") for i in range(3000)]
    for n in range(3):
        write_jsonl_zst(root / f"{n:02d}.jsonl.zst", docs[n * 1000:(n + 1) * 1000])
    return root


def _committed(out: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in out.glob("*.tfrecord") if storage.TMP_MARKER not in p.name)


@contextlib.contextmanager
def _pipeline_process(*args, log: pathlib.Path):
    """``python -m pipeline.run ARGS`` in its own session; everything left of it is killed."""
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "pipeline.run", *map(str, args)],
                                   cwd=REPO, env=child_env(), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield process
        finally:
            for pid in _session(process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait(timeout=30)


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (Linux /proc)."""
    pids = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":  # fields[3]: session id
                pids.append(int(stat.parent.name))
    return pids


def test_sigkill_mid_write_then_rerun_is_identical(big_input, tokenizer_model, tmp_path):
    args = ["--input", big_input, "--tokenizer_model", tokenizer_model, *KILL_ARGS]
    reference = tmp_path / "reference" / "train"
    assert run_inprocess(*args, "--output", reference) == 0
    ref = load(reference)
    assert len(ref["shards"]) > 100

    out = tmp_path / "killed" / "train"
    with _pipeline_process(*args, "--output", out, log=tmp_path / "killed.log") as process:
        deadline = time.monotonic() + 120
        while not (out.exists() and _committed(out)):
            assert process.poll() is None, "the run ended before its first shard was seen"
            assert time.monotonic() < deadline, "no shard committed within 120 s"
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL

    # Killed mid-way: no manifest, some shards; each one with a final name is complete.
    committed = _committed(out)
    assert not (out / "manifest.json").exists()
    assert 1 <= len(committed) < len(ref["shards"]), "the kill did not land mid-write"
    for path in committed:
        assert path.read_bytes() == (reference / path.name).read_bytes(), path.name
    partial = [p.name for p in out.iterdir() if storage.TMP_MARKER in p.name]
    print(f"killed after {len(committed)} of {len(ref['shards'])} shards; in progress: {partial}")
    # A directory without a manifest is not a dataset, and verify says so.
    refused = python_module("pipeline.verify", "--manifest", out)
    assert refused.returncode == 2 and "no manifest" in refused.stderr

    # The rerun (same command, no --overwrite needed) cleans up and completes.
    assert run_inprocess(*args, "--output", out) == 0
    again = load(out)
    assert comparable(again) == comparable(ref)
    for shard in ref["shards"]:
        assert (out / shard["path"]).read_bytes() == (reference / shard["path"]).read_bytes()
    leftovers = [p.name for p in out.rglob("*") if storage.TMP_MARKER in p.name]
    assert leftovers == [], f"leftovers {leftovers} (before the rerun: {partial})"
    report = verify.verify(str(out))
    assert report.ok and report.notes == [], report


def test_sigkill_leaves_no_orphan_processes(big_input, tokenizer_model, tmp_path):
    out = tmp_path / "train"
    with _pipeline_process("--input", big_input, "--output", out, "--tokenizer_model",
                           tokenizer_model, "--encode_processes=2", *KILL_ARGS,
                           log=tmp_path / "run.log") as process:
        deadline = time.monotonic() + 120
        while not (out.exists() and _committed(out)):  # encoding is under way
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {pid: pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:80]
                for pid in _session(process.pid)}
    assert left == {}, f"processes left running 10 s after the pipeline was killed: {left}"


# --- pipeline.verify --------------------------------------------------------------------


@pytest.fixture
def dataset(clean_dataset, tmp_path):
    """A private copy of the session's clean dataset, to damage."""
    copy = tmp_path / "train"
    shutil.copytree(clean_dataset, copy)
    return copy


def _verify(path, *flags):
    result = python_module("pipeline.verify", "--manifest", path, *flags)
    return result.returncode, result.stdout + result.stderr


def _shard(dataset, n=1) -> pathlib.Path:
    return dataset / load(dataset)["shards"][n]["path"]


def test_clean_dataset_verifies_deep(dataset):
    code, output = _verify(dataset / "manifest.json", "--deep")
    doc = load(dataset)
    assert code == 0, output
    assert f"OK: {len(doc['shards'])} shards, {doc['totals']['records']} records checked (deep)" \
        in output


def test_flipped_byte_is_named(dataset):
    shard = _shard(dataset)
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    code, output = _verify(dataset)
    assert code == 1
    problems = [line for line in output.splitlines() if line.startswith("PROBLEM")]
    assert problems and all(shard.name in line for line in problems), output
    assert any("sha256" in line for line in problems)
    assert any("checksum mismatch" in line for line in problems)  # the TFRecord CRC too


def test_truncated_shard_is_named(dataset):
    shard = _shard(dataset)
    size = shard.stat().st_size
    os.truncate(shard, size - 7)
    code, output = _verify(dataset)
    assert code == 1
    assert f"PROBLEM {shard.name}: truncated TFRecord" in output
    assert f"{shard.name}: {size - 7} bytes, manifest says {size}" in output


def test_missing_shard_is_named(dataset):
    shard = _shard(dataset, 0)
    shard.unlink()
    code, output = _verify(dataset)
    assert code == 1 and f"PROBLEM {shard.name}: missing" in output


def test_swapped_tokenizer_is_named(dataset):
    (dataset / "tokenizer.model").write_bytes(b"another model")
    code, output = _verify(dataset)
    assert code == 1 and "PROBLEM tokenizer.model: sha256" in output


@pytest.mark.parametrize("damage, message", [
    (lambda doc: "{ not json", "not valid JSON"),
    (lambda doc: dict(doc, version=4), "version 4 is not supported"),
    (lambda doc: dict(doc, version=1), "version 1 was written by an older pilepack"),
    (lambda doc: {k: v for k, v in doc.items() if k != "shards"}, "'shards' is a required"),
    (lambda doc: dict(doc, seq_len=doc["seq_len"] + 1), "shape"),
    (lambda doc: dict(doc, shards=[dict(doc["shards"][0], path="../escape.tfrecord")]),
     "shards/0/path: '../escape.tfrecord'"),
])
def test_invalid_manifest_is_refused(dataset, damage, message):
    path = dataset / "manifest.json"
    changed = damage(json.loads(path.read_text()))
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    code, output = _verify(path)
    assert code == 2 and output.startswith("error: ") and message in output, output
    assert "Traceback" not in output


def test_inconsistent_totals_and_accounting_are_problems(dataset):
    path = dataset / "manifest.json"
    doc = json.loads(path.read_text())
    doc["totals"]["records"] += 1
    doc["accounting"]["written"] -= 1
    path.write_text(json.dumps(doc))
    code, output = _verify(path)
    assert code == 1
    assert "totals.records" in output and "accounting does not add up" in output


def test_deep_parses_every_record(dataset):
    """A record with valid framing and CRCs but not the manifest's features passes the
    shallow check (sizes, hashes, CRCs); only parsing every record finds it."""
    from schemas.records import frame_tfrecord, iter_tfrecord_frames

    shard = _shard(dataset)
    with open(shard, "rb") as handle:
        payloads = list(iter_tfrecord_frames(handle))
    payloads[-1] = payloads[-1].replace(b"tokens", b"tokenz")  # a feature the spec lacks
    data = b"".join(frame_tfrecord(p) for p in payloads)
    shard.write_bytes(data)
    path = dataset / "manifest.json"
    doc = json.loads(path.read_text())
    entry = next(s for s in doc["shards"] if s["path"] == shard.name)
    entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    path.write_text(json.dumps(doc))

    assert verify.verify(str(path)).ok  # sizes, hashes, framing all consistent
    problems = verify.verify(str(path), deep=True).problems
    last = len(payloads) - 1
    assert len(problems) == 1 and problems[0].startswith(f"{shard.name}: records "), problems
    assert f"..{last} do not parse" in problems[0] and "tokens" in problems[0]


def test_leftover_files_are_noted_not_failed(dataset):
    (dataset / ".inprogress-0123-train-00000-00009.tfrecord").write_bytes(b"partial")
    code, output = _verify(dataset)
    assert code == 0
    assert "NOTE .inprogress-0123-train-00000-00009.tfrecord: not listed" in output
