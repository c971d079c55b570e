"""A rerun keeps what the killed run committed: a run SIGKILLed after training its tokenizer is
rerun with the same command, reuses the trained model, and writes the bytes an uninterrupted
run writes. A changed input or ``--no-resume`` trains again. Likewise a run killed while it
writes its parts reuses the chunks it committed (``pipeline.write.committed_parts``), and one
killed after its quality pre-pass skips the pre-pass (``pipeline.quality.committed_prepass``);
a changed input or flag, or ``--no-resume``, recomputes them.
"""

from __future__ import annotations

import os
import pathlib
import signal
import time

import pytest

from common import storage
from datagen.pile_files import write_jsonl_zst
from pipeline.quality import committed_prepass
from pipeline.quality.decision_files import QUALITY_DIR
from pipeline.tokenize.committed_model import COMMITTED_NAME
from pipeline.write.committed_parts import COMMITTED_DIR
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


# A tokenizer given, so that the kill lands while the parts are written, not while training.
PART_ARGS = [*SMALL, "--split=train", "--chunk_bytes=4000"]


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> pathlib.Path:
    src = tmp_path_factory.mktemp("resume-big")
    for index in range(3):
        write_jsonl_zst(src / f"{index:02d}.jsonl.zst", good_docs(20 + index, 120), frames=3)
    return src


@pytest.fixture(scope="module")
def model(reference) -> pathlib.Path:
    return reference / "tokenizer.model"


@pytest.fixture(scope="module")
def parts_reference(big_corpus, model, tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("resume-parts-ref") / "train"
    assert run_inprocess("--input", big_corpus, *PART_ARGS, "--tokenizer_model", model,
                         "--output", out, "--no-resume") == 0
    return out


def _killed_when(args, out: pathlib.Path, log: pathlib.Path, committed) -> None:
    """Run ``python -m pipeline.run ARGS`` and SIGKILL all of it once ``committed(out)``."""
    with _pipeline_process(*args, log=log) as process:
        deadline = time.monotonic() + 240
        while not committed(out):
            assert process.poll() is None, "the run ended before the kill: " + log.read_text()[
                -2000:]
            assert time.monotonic() < deadline, "nothing committed within 240 s"
            time.sleep(0.002)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert not (out / "manifest.json").exists(), "the kill landed after the commit"


def _part_records(out: pathlib.Path) -> list[pathlib.Path]:
    """The committed parts' records (not one being written: ``.inprogress-…``)."""
    return sorted(p for p in (out / COMMITTED_DIR).glob("*.part")
                  if not p.name.startswith(storage.TMP_MARKER))


def _parts_committed(count: int):
    def committed(out: pathlib.Path) -> bool:
        return len(_part_records(out)) >= count
    return committed


def _parts_args(corpus, model, out) -> list:
    return ["--input", corpus, *PART_ARGS, "--tokenizer_model", model, "--output", out]


# In-process, and with two worker processes (the chunks fanned out, parsed and written by
# either worker): the records live with the parts, whichever worker wrote them.
MODES = {"in-process": [],
         "multi-processing": ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]}


@pytest.mark.parametrize("mode", MODES)
def test_rerun_after_sigkill_reuses_the_committed_chunks_and_is_identical(
        big_corpus, model, parts_reference, tmp_path, mode):
    out = tmp_path / "train"
    args = [*_parts_args(big_corpus, model, out), *MODES[mode]]
    _killed_when(args, out, tmp_path / "killed.log", _parts_committed(3))
    # Chunks with every record committed (one part each: no mixture here).
    committed = sum(1 for part in _part_records(out)
                    if all(part.with_name(part.name.replace("-e0000.part", end)).exists()
                           for end in (".read", ".encode")))
    rerun = python_module("pipeline.run", *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resume = load(out)["resume"]
    total = load(parts_reference)["resume"]["parts_total"]
    assert resume["parts_reused"] == committed >= 3 and resume["parts_total"] == total
    assert f"resume: reused {resume['parts_reused']} of {total} chunk(s)" in rerun.stdout
    assert comparable(load(out)) == comparable(load(parts_reference))
    assert _files(out) == _files(parts_reference)  # shards, dead letters, doc hashes
    assert not (out / COMMITTED_DIR).exists(), "a committed dataset keeps no resume state"


def test_a_touched_input_a_changed_flag_or_no_resume_recomputes_every_chunk(
        big_corpus, model, parts_reference, tmp_path):
    moved = tmp_path / "src"  # the same bytes, its own mtimes
    moved.mkdir()
    for path in big_corpus.iterdir():
        (moved / path.name).write_bytes(path.read_bytes())
    reruns = {
        "touched": lambda: os.utime(moved / "01.jsonl.zst", (1_700_000_100, 1_700_000_100)),
        "flag": lambda: None,  # --encoder_check_every: the same bytes, another option
        "no-resume": lambda: None,
    }
    extra = {"flag": ["--encoder_check_every=7"], "no-resume": ["--no-resume"]}
    for name, change in reruns.items():
        out = tmp_path / name / "train"
        args = _parts_args(moved, model, out)
        _killed_when(args, out, tmp_path / f"{name}.log", _parts_committed(2))
        change()
        rerun = python_module("pipeline.run", *args, *extra.get(name, []))
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        assert load(out)["resume"]["parts_reused"] == 0, name
        assert _files(out) == _files(parts_reference), name


def test_a_chunk_missing_one_record_is_recomputed(big_corpus, model, parts_reference, tmp_path):
    out = tmp_path / "train"
    args = _parts_args(big_corpus, model, out)
    _killed_when(args, out, tmp_path / "killed.log", _parts_committed(3))
    parts = _part_records(out)
    parts[0].unlink()  # its part file may be whole: without its record it is not committed
    (out / COMMITTED_DIR / parts[1].name.replace("-e0000.part", ".encode")).unlink()
    rerun = python_module("pipeline.run", *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert load(out)["resume"]["parts_reused"] <= len(parts) - 2
    assert _files(out) == _files(parts_reference)


def test_a_rerun_after_the_prepass_skips_it(big_corpus, model, tmp_path):
    quality = ["--dedup=exact", "--subset_weights=pile-v1"]
    reference = tmp_path / "ref" / "train"
    assert run_inprocess(*_parts_args(big_corpus, model, reference), *quality) == 0
    out = tmp_path / "train"
    args = [*_parts_args(big_corpus, model, out), *quality]
    _killed_when(args, out, tmp_path / "killed.log",
                 lambda out: (out / QUALITY_DIR / committed_prepass.COMMITTED_NAME).exists())
    rerun = python_module("pipeline.run", *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert load(out)["resume"]["prepass_reused"] is True
    assert not load(reference)["resume"]["prepass_reused"]
    strip = comparable
    assert {k: v for k, v in strip(load(out)).items() if k != "quality"} == {
        k: v for k, v in strip(load(reference)).items() if k != "quality"}
    assert _files(out) == _files(reference)
