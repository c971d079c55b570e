"""Kill a 2-worker run with SIGKILL, resume it on 1 and on 3 workers (``--order=global``, the
same global batch): every step after the checkpoint has an uninterrupted run's loss."""

import json
import os
import shutil
import time

import pytest

from datagen.datasets import learnable_dataset
from tests.trainer.test_multiworker import TIMEOUT_S, finish_workers, kill_workers, start_workers

STEPS = 12
CHECKPOINT_EVERY = 4
BATCH = 6  # divisible by 1, 2 and 3 workers
CONFIG = {"order": "global", "global_batch_size": BATCH, "checkpoint_every": CHECKPOINT_EVERY,
          "keep_checkpoints": 10, "learning_rate": 3e-3}


def logged_steps(model_dir: str) -> list[int]:
    path = os.path.join(model_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line)["step"] for line in handle.read().splitlines()
                if line.endswith("}")]


def train(tmp_path, name: str, *, manifest: str, model_dir: str, workers: int) -> dict:
    """Train to STEPS on ``workers`` workers; the chief's result, and its log text."""
    out_dir = tmp_path / name
    out_dir.mkdir()
    chief = finish_workers(
        start_workers(manifest=manifest, model_dir=model_dir, out_dir=str(out_dir),
                      workers=workers, steps=STEPS, config=CONFIG),
        out_dir=str(out_dir),
    )[0]
    assert chief["world_size"] == workers
    chief["log"] = (out_dir / "worker0.log").read_text()
    return chief


def kill_mid_run(tmp_path, *, manifest: str, model_dir: str) -> list[int]:
    """Two workers, slowed down, SIGKILLed once a step after the first checkpoint is logged;
    the steps they logged."""
    out_dir = tmp_path / "killed"
    out_dir.mkdir()
    procs = start_workers(manifest=manifest, model_dir=model_dir, out_dir=str(out_dir),
                          workers=2, steps=STEPS, config=CONFIG, seconds_per_batch=0.3)
    deadline = time.monotonic() + TIMEOUT_S
    while (max(logged_steps(model_dir), default=0) <= CHECKPOINT_EVERY
           and all(proc.poll() is None for proc, _, _ in procs)
           and time.monotonic() < deadline):
        time.sleep(0.02)
    kill_workers(procs)
    assert [proc.returncode for proc, _, _ in procs] == [-9, -9], (out_dir / "worker0.log")
    return logged_steps(model_dir)


@pytest.mark.slow
def test_a_run_killed_on_2_workers_resumes_exactly_on_1_and_on_3(tmp_path):
    manifest = learnable_dataset(str(tmp_path / "data"))  # 128 records: 21 steps an epoch
    reference = train(tmp_path, "reference", manifest=manifest,
                      model_dir=str(tmp_path / "reference-run"), workers=1)
    losses = {row["step"]: row["loss"] for row in reference["history"]}
    assert sorted(losses) == list(range(1, STEPS + 1))

    killed_dir = str(tmp_path / "killed-run")
    killed_steps = kill_mid_run(tmp_path, manifest=manifest, model_dir=killed_dir)
    assert CHECKPOINT_EVERY < max(killed_steps) < STEPS, killed_steps
    with open(os.path.join(killed_dir, "metrics.jsonl")) as handle:
        for row in map(json.loads, handle):  # 2 workers train on the 1-worker run's records
            assert row["loss"] == pytest.approx(losses[row["step"]], rel=1e-4), row

    for workers in (1, 3):
        model_dir = str(tmp_path / f"resumed-on-{workers}")
        shutil.copytree(killed_dir, model_dir)
        resumed = train(tmp_path, f"resumed-{workers}", manifest=manifest, model_dir=model_dir,
                        workers=workers)
        steps = [row["step"] for row in resumed["history"]]
        checkpoint = max(killed_steps) // CHECKPOINT_EVERY * CHECKPOINT_EVERY
        assert steps == list(range(checkpoint + 1, STEPS + 1)), workers
        for row in resumed["history"]:
            assert row["loss"] == pytest.approx(losses[row["step"]], rel=1e-4), (workers, row)
        assert f"resuming on {workers} input pipelines (run.json: 2)" in resumed["log"]
