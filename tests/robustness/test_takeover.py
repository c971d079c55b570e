"""A run whose claim was taken over writes nothing more into ``--output`` (docs/robustness.md,
"Reruns and the output claim"): every file its workers commit there is fenced by the claim
(``schemas.claim.Fence``), not only its manifest.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

from datagen.pile_files import write_jsonl_zst
from pipeline.launch import claim
from pipeline.quality.decision_files import write_decisions, write_totals
from pipeline.quality.doc_hash import DIGEST_BYTES
from pipeline.quality.split_doc_hashes import write_hash_file
from pipeline.tokenize.training_sample import write_sample_file
from pipeline.write.dead_letters import write_dead_letters
from pipeline.write.shard_plan import PARTS_DIR, Piece, ShardPlan
from pipeline.write.shards import assemble_shard
from schemas.claim import Claim, ClaimLost, Fence
from tests.robustness.conftest import good_docs
from tests.robustness.helpers import REPO, SMALL, child_env, load, run_inprocess

FRAME = 8  # bytes per record of the hand-made parts below


def _claim_of(out) -> Claim | None:
    path = out / claim.CLAIM_NAME
    return Claim.from_bytes(path.read_bytes()) if path.exists() else None


def _taken_over(out) -> tuple[Claim, Claim]:
    """(old, new): ``out`` claimed by a run, then taken over by another (its launcher, say,
    ran on another machine: ``--take_over_claim``)."""
    old = claim.claim(str(out))
    elsewhere = dataclasses.replace(old, boot_id="another-machine", pid_namespace="other")
    (out / claim.CLAIM_NAME).write_bytes(elsewhere.to_bytes())
    return old, claim.claim(str(out), take_over=old.run_id)


def _shard_plan() -> ShardPlan:
    return ShardPlan(index=0, name="train-00000-of-00001.tfrecord",
                     pieces=(Piece(f"{PARTS_DIR}/00000-0000000.tfrecords", 1, 2),),
                     records=2, tokens=0, padding_tokens=0)


def test_a_taken_over_job_commits_no_shard(tmp_path):
    out = tmp_path / "out"
    old, new = _taken_over(out)
    (out / PARTS_DIR).mkdir()
    (out / PARTS_DIR / "00000-0000000.tfrecords").write_bytes(bytes(range(3 * FRAME)))

    with pytest.raises(ClaimLost, match=f"now claimed by run {new.run_id}.*not by run "
                                        f"{old.run_id} \\(this job\\).*before committing "
                                        "train-00000-of-00001.tfrecord") as err:
        assemble_shard(_shard_plan(), directory=str(out), frame_bytes=FRAME,
                       fence=Fence(output=str(out), run_id=old.run_id))
    assert "\n" not in str(err.value)  # one line
    assert sorted(p.name for p in out.iterdir()) == [PARTS_DIR, claim.CLAIM_NAME]  # no shard,
    # no temporary file left

    info = assemble_shard(_shard_plan(), directory=str(out), frame_bytes=FRAME,
                          fence=Fence(output=str(out), run_id=new.run_id))  # the holder writes
    assert (out / info.path).read_bytes() == bytes(range(FRAME, 3 * FRAME))


# Other writers of a run's jobs, each given the old run's fence: (name, write(directory, fence)).
WRITERS = {
    "dead letters": lambda out, fence: write_dead_letters(
        [], directory=out, split="train", file_index=0, fence=fence),
    "document hashes": lambda out, fence: write_hash_file(
        [b"\x01" * DIGEST_BYTES], directory=out, index=0, fence=fence),
    "decision file (pre-pass)": lambda out, fence: write_decisions(
        [(3, "duplicate")], directory=out, file_index=0, fence=fence),
    "totals (pre-pass)": lambda out, fence: write_totals({}, directory=out, fence=fence),
    "tokenizer sample": lambda out, fence: write_sample_file(
        [(0.5, "Pile-CC", "A sentence.")], directory=out, file_index=0, fence=fence),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_of_a_taken_over_job_commits_nothing(tmp_path, writer):
    out = tmp_path / "out"
    old, new = _taken_over(out)
    with pytest.raises(ClaimLost, match=f"now claimed by run {new.run_id}"):
        WRITERS[writer](str(out), Fence(output=str(out), run_id=old.run_id))
    left = [p.relative_to(out) for p in out.rglob("*") if p.is_file()]
    assert [str(p) for p in left] == [claim.CLAIM_NAME]
    WRITERS[writer](str(out), Fence(output=str(out), run_id=new.run_id))  # the holder writes
    assert len([p for p in out.rglob("*") if p.is_file()]) == 2


# --- a real run, taken over while it writes ---------------------------------------------------

def _committed(files: dict) -> dict:
    """``files`` less the temporary ones (``.inprogress-``), which no reader ever takes."""
    return {name: value for name, value in files.items()
            if not os.path.basename(name).startswith(".inprogress-")}


def _files(out) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``out``: (inode, mtime, bytes), to see whether anything changed."""
    found = {}
    for root, _, names in os.walk(out):
        for name in names:
            path = os.path.join(root, name)
            stat = os.stat(path)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, out)] = (stat.st_ino, stat.st_mtime_ns, handle.read())
    return found


def _start(*args, log) -> subprocess.Popen:
    """``python -m pipeline.run ARGS`` (DirectRunner) in its own process group."""
    return subprocess.Popen([sys.executable, "-m", "pipeline.run", *map(str, args),
                             "--runner=DirectRunner"], cwd=REPO, env=child_env(),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop_once_a_part_is_written(process: subprocess.Popen, out, *, run_id: str) -> None:
    """SIGSTOP ``process`` (and its workers) once run ``run_id`` committed a part there."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before it could be stopped"
        parts = out / PARTS_DIR
        holder = _claim_of(out)
        if holder and holder.run_id == run_id and parts.is_dir() and any(
                name.endswith(".tfrecords") and not name.startswith(".")
                for name in os.listdir(parts)):
            os.killpg(process.pid, signal.SIGSTOP)
            return
        time.sleep(0.005)
    raise TimeoutError("no part written in 120 s")


def _wait_for_claim(out, *, unlike: str, process: subprocess.Popen) -> Claim:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before it claimed the output"
        holder = _claim_of(out)
        if holder is not None and holder.run_id != unlike:
            return holder
        time.sleep(0.005)
    raise TimeoutError("the output was not claimed in 120 s")


@pytest.fixture(scope="module")
def takeover_input(tmp_path_factory):
    """Inputs of many chunks (a run writes parts for a while), and a clean run's output."""
    src = tmp_path_factory.mktemp("takeover-src")
    for index in range(3):
        write_jsonl_zst(src / f"{index:02d}.jsonl.zst", good_docs(30 + index, 150))
    clean = tmp_path_factory.mktemp("takeover-clean") / "train"
    assert run_inprocess("--input", src, "--output", clean, "--vocab_size=400", *SMALL) == 0
    return src, clean


@pytest.mark.slow
def test_a_taken_over_run_writes_nothing_more_and_the_new_one_is_clean(tmp_path,
                                                                       takeover_input):
    src, clean = takeover_input
    out = tmp_path / "train"
    args = ("--input", src, "--output", out, "--tokenizer_model", clean / "tokenizer.model",
            *SMALL)
    with open(tmp_path / "old.log", "wb") as old_log, open(tmp_path / "new.log", "wb") as new_log:
        old_run = _start(*args, log=old_log)
        old = _wait_for_claim(out, unlike="", process=old_run)
        try:
            _stop_once_a_part_is_written(old_run, out, run_id=old.run_id)
            # Its launcher, seen from the new run, runs on another machine: only
            # --take_over_claim takes the output over.
            elsewhere = dataclasses.replace(_claim_of(out), boot_id="another-machine",
                                            pid_namespace="other")
            (out / claim.CLAIM_NAME).write_bytes(elsewhere.to_bytes())
            new_run = _start(*args, f"--take_over_claim={old.run_id}", log=new_log)
            new = _wait_for_claim(out, unlike=old.run_id, process=new_run)
            _stop_once_a_part_is_written(new_run, out, run_id=new.run_id)

            before = _files(out)  # the new run's files so far
            os.killpg(old_run.pid, signal.SIGCONT)  # the old job goes on: it must stop
            assert old_run.wait(timeout=300) != 0
            after = _files(out)
            # Nothing committed or changed, nothing left behind; the old job may only have
            # removed its own unfinished temporary file (a record it was writing when stopped).
            assert _committed(after) == _committed(before)
            assert set(after) <= set(before), sorted(set(after) - set(before))
            lines = (tmp_path / "old.log").read_text().strip().splitlines()
            assert f"is now claimed by run {new.run_id}" in lines[-1], lines[-5:]

            os.killpg(new_run.pid, signal.SIGCONT)
            assert new_run.wait(timeout=300) == 0, (tmp_path / "new.log").read_text()[-3000:]
        finally:
            for process in (old_run, locals().get("new_run")):
                if process is not None and process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()

    doc, reference = load(out), load(clean)
    assert doc["run_id"] == new.run_id
    assert [s["sha256"] for s in doc["shards"]] == [s["sha256"] for s in reference["shards"]]
    for name in sorted({*map(str, _relative(clean)), *map(str, _relative(out))}):
        if name.endswith((".tfrecord", ".bin", ".jsonl")):
            assert (out / name).read_bytes() == (clean / name).read_bytes(), name


def _relative(root):
    return [path.relative_to(root) for path in root.rglob("*") if path.is_file()]
