"""A rerun keeps what the killed run committed: a run SIGKILLed after training its tokenizer is
rerun with the same command, reuses the trained model, and writes the bytes an uninterrupted
run writes. A changed input or ``--no-resume`` trains again.
"""

from __future__ import annotations

import os
import pathlib
import signal
import time

import pytest

from datagen.pile_files import write_jsonl_zst
from pipeline.tokenize.committed_model import COMMITTED_NAME
from tests.robustness.conftest import good_docs
from tests.robustness.helpers import SMALL, comparable, load, python_module, run_inprocess
from tests.robustness.test_faults import _pipeline_process, _session

ARGS = ["--vocab_size=400", *SMALL, "--split=train"]
REUSED = "reusing the tokenizer an earlier run trained"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> pathlib.Path:
    src = tmp_path_factory.mktemp("resume-src")
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(7, 60), frames=2)
    return src


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("resume-ref") / "train"
    assert run_inprocess("--input", corpus, *ARGS, "--output", out) == 0
    return out


def _files(out: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


def _killed_after_training(corpus, out: pathlib.Path, log: pathlib.Path) -> None:
    """Run the command and SIGKILL all of it once its tokenizer is committed."""
    with _pipeline_process("--input", corpus, *ARGS, "--output", out, log=log) as process:
        deadline = time.monotonic() + 240
        while not (out / COMMITTED_NAME).exists():
            assert process.poll() is None, "the run ended before its tokenizer was committed"
            assert time.monotonic() < deadline, "no tokenizer committed within 240 s"
            time.sleep(0.005)
        os.killpg(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while _session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert not (out / "manifest.json").exists(), "the kill landed after the commit"


def _trained(doc: dict) -> dict:
    """The manifest's training record less its timings (the killed run's, when reused)."""
    return {k: v for k, v in doc["tokenizer"]["trained"].items() if not k.endswith("_seconds")}


def test_rerun_after_sigkill_reuses_the_tokenizer_and_is_identical(corpus, reference,
                                                                   tmp_path):
    out = tmp_path / "train"
    _killed_after_training(corpus, out, tmp_path / "killed.log")
    rerun = python_module("pipeline.run", "--input", corpus, *ARGS, "--output", out)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert REUSED in rerun.stderr
    assert "training a 400-piece tokenizer" not in rerun.stderr
    assert comparable(load(out)) == comparable(load(reference))
    assert _trained(load(out)) == _trained(load(reference))
    assert _files(out) == _files(reference)  # shards, dead letters, tokenizer
    assert not (out / COMMITTED_NAME).exists(), "a committed dataset keeps no resume state"


def test_a_touched_input_or_no_resume_trains_again(corpus, reference, tmp_path):
    out = tmp_path / "train"
    _killed_after_training(corpus, out, tmp_path / "killed.log")
    rerun = python_module("pipeline.run", "--input", corpus, *ARGS, "--output", out,
                          "--no-resume")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert REUSED not in rerun.stderr and "training a 400-piece tokenizer" in rerun.stderr
    assert _files(out) == _files(reference)

    moved = tmp_path / "src"  # the same bytes, another mtime
    moved.mkdir()
    (moved / "00.jsonl.zst").write_bytes((corpus / "00.jsonl.zst").read_bytes())
    os.utime(moved / "00.jsonl.zst", (1_700_000_000, 1_700_000_000))
    out = tmp_path / "touched" / "train"
    _killed_after_training(moved, out, tmp_path / "killed2.log")
    os.utime(moved / "00.jsonl.zst", (1_700_000_100, 1_700_000_100))
    rerun = python_module("pipeline.run", "--input", moved, *ARGS, "--output", out)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert REUSED not in rerun.stderr and "inputs or options changed" in rerun.stderr
    assert _files(out) == _files(reference)
