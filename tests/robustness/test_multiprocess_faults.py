"""Faults under real multi-process execution: the whole run -- the launching process, Beam's
two ``multi_processing`` worker processes and everything they started -- SIGKILLed at once
while it writes parts, or while it assembles shards, then rerun with the same command.

The rerun's shards, dead letters and manifest equal a clean in-process run's, byte for byte;
every dead letter is there once; no file of the killed run is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from common import storage
from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import run
from tests.robustness.helpers import REPO, child_env, comparable, load, run_inprocess, text
from tests.robustness.test_faults import _committed, _pipeline_process, _session

TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]
# ~1.3 MB of text -> ~130 shards of 64 KiB (16-token records with segment ids are ~10 bytes a
# token), in ~26 parts: seconds of writing parts, then shards assembled from them.
ARGS = ["--seq_len=16", "--segment_ids", "--shard_bytes=65536", "--chunk_bytes=50000",
        "--encode_processes=1", "--split=train"]
BAD_LINES = {50: b'{"broken 50', 400: b'{"text": 400}', 777: b'{"broken 777'}


@pytest.fixture(scope="module")
def one_file(tmp_path_factory) -> pathlib.Path:
    base = [text(90000 + i, 300) for i in range(100)]
    lines = [pile_doc(f"{i}: {base[i % 100]}", ("Pile-CC", "Github")[i % 2]) for i in range(1000)]
    for at, line in sorted(BAD_LINES.items()):
        lines.insert(at, line)
    path = tmp_path_factory.mktemp("mp-kill-in") / "00.jsonl.zst"
    return pathlib.Path(write_jsonl_zst(path, lines, frames=2))


@pytest.fixture(scope="module")
def reference(one_file, tokenizer_model, tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("mp-kill-ref") / "train"
    assert run_inprocess("--input", one_file, "--tokenizer_model", tokenizer_model, *ARGS,
                         "--output", out) == 0
    return out


def _committed_parts(out: pathlib.Path) -> list[pathlib.Path]:
    parts = out / ".parts"
    with contextlib.suppress(FileNotFoundError):
        return [p for p in parts.iterdir() if storage.TMP_MARKER not in p.name]
    return []


def _dataset_files(out: pathlib.Path) -> dict[str, bytes]:
    """Every file the dataset holds (shards, dead letters, tokenizer), by relative path."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


@pytest.mark.parametrize("moment", ["parts", "shards"])
def test_sigkill_of_every_process_then_rerun_is_identical(one_file, tokenizer_model, reference,
                                                          tmp_path, moment):
    args = ["--input", one_file, "--tokenizer_model", tokenizer_model, *ARGS]
    out = tmp_path / "train"
    landed = _committed_parts if moment == "parts" else _committed
    with _pipeline_process(*args, "--output", out, *TWO_WORKERS,
                           log=tmp_path / "killed.log") as process:
        deadline = time.monotonic() + 120
        while not (out.exists() and landed(out)):
            assert process.poll() is None, "the run ended before the moment to kill it"
            assert time.monotonic() < deadline, f"no {moment} committed within 120 s"
            time.sleep(0.005)
        running = _session(process.pid)
        os.killpg(process.pid, signal.SIGKILL)  # the whole run: launcher and Beam's workers
        assert process.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while _session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session(process.pid) == [], "processes of the killed run still alive"
    assert len(running) >= 3, f"expected a launcher and two workers, saw {running}"

    ref = load(reference)
    assert not (out / "manifest.json").exists(), "the kill landed after the commit"
    shards = _committed(out)
    assert len(shards) < len(ref["shards"])
    for path in shards:  # a shard with its final name is complete and final
        assert path.read_bytes() == (reference / path.name).read_bytes(), path.name
    print(f"killed with {len(_committed_parts(out))} parts and {len(shards)} of "
          f"{len(ref['shards'])} shards committed")

    assert run.main([*map(str, args), "--output", str(out), *TWO_WORKERS]) == 0
    assert comparable(load(out)) == comparable(ref)
    assert _dataset_files(out) == _dataset_files(reference)
    leftovers = [str(p) for p in out.rglob("*") if storage.TMP_MARKER in p.name]
    assert leftovers == [] and not (out / ".parts").exists(), leftovers
    letters = [json.loads(line) for entry in load(out)["dead_letters"]
               for line in (out / entry["path"]).read_text().splitlines()]
    assert sorted(d["line"] for d in letters) == [at + 1 for at in sorted(BAD_LINES)]


@pytest.mark.parametrize("refusal, says", [
    ("--on_bad_record=fail", "invalid_json"),  # raised while parsing, in a worker
    ("--max_bad_fraction=0", "3 of 1003 records were rejected"),  # raised by the manifest step
])
def test_refused_run_says_why_in_one_line_without_a_traceback(one_file, tokenizer_model,
                                                              tmp_path, refusal, says):
    """Bad input stops a multi-process run as it stops an in-process one: exit status 2 and
    one ``error:`` line. Beam's worker processes write to this command's terminal; they must
    not print the error's traceback there first."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run", "--input", str(one_file), "--tokenizer_model",
         str(tokenizer_model), *ARGS, "--output", str(tmp_path / "train"), *TWO_WORKERS,
         refusal],
        cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output, output
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and says in errors[0], output
    assert not (tmp_path / "train" / "manifest.json").exists()
