"""Kill training with SIGKILL, rerun the same command: the losses match an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from datagen.datasets import learnable_dataset

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 300
KILL_AFTER_STEP = 60
TIMEOUT_S = 180


def command(manifest, model_dir):
    return [
        sys.executable,
        "-m",
        "trainer.train",
        f"--train_manifest={manifest}",
        f"--model_dir={model_dir}",
        "--preset=tiny",
        f"--steps={STEPS}",
        "--global_batch_size=8",
        "--learning_rate=3e-3",
        "--warmup_steps=10",
        "--log_every=1",
        "--checkpoint_every=25",
        "--dropout=0.1",
        "--shuffle_buffer=32",
        "--backend=single",
    ]


def start(manifest, model_dir, log_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    log = open(log_path, "w")  # noqa: SIM115 (closed by finish() once the process ends)
    proc = subprocess.Popen(
        command(manifest, model_dir),
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return proc, log


def finish(proc, log, log_path):
    try:
        proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()
    if proc.returncode != 0:
        with open(log_path) as handle:
            pytest.fail(f"training exited with {proc.returncode}:\n{handle.read()[-3000:]}")


def losses(model_dir):
    """step -> loss from each step's last row (a resumed run repeats steps after its checkpoint)."""
    out = {}
    with open(os.path.join(model_dir, "metrics.jsonl")) as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                out[row["step"]] = row["loss"]
    return out


def last_step(model_dir):
    path = os.path.join(model_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return 0
    with open(path) as handle:
        lines = [line for line in handle.read().splitlines() if line.endswith("}")]
    return json.loads(lines[-1])["step"] if lines else 0


@pytest.mark.slow
def test_kill_and_resume_gives_the_uninterrupted_losses(tmp_path):
    manifest = learnable_dataset(str(tmp_path / "data"))  # 16 steps an epoch: resumes mid-epoch
    reference_dir, killed_dir = str(tmp_path / "reference"), str(tmp_path / "killed")

    proc, log = start(manifest, killed_dir, tmp_path / "killed.log")
    deadline = time.monotonic() + TIMEOUT_S
    while (
        last_step(killed_dir) < KILL_AFTER_STEP
        and proc.poll() is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    log.close()
    killed_at = last_step(killed_dir)
    assert proc.returncode == -signal.SIGKILL and KILL_AFTER_STEP <= killed_at < STEPS, killed_at

    proc, log = start(manifest, killed_dir, tmp_path / "resumed.log")
    finish(proc, log, tmp_path / "resumed.log")
    with open(tmp_path / "resumed.log") as handle:
        resumed_from = int(handle.read().split("restored ")[1].split("(step ")[1].split(")")[0])
    assert resumed_from == killed_at // 25 * 25

    proc, log = start(manifest, reference_dir, tmp_path / "reference.log")
    finish(proc, log, tmp_path / "reference.log")

    reference, resumed = losses(reference_dir), losses(killed_dir)
    assert sorted(resumed) == sorted(reference) == list(range(1, STEPS + 1))
    for step in range(resumed_from + 1, STEPS + 1):
        assert resumed[step] == pytest.approx(reference[step], rel=1e-6, abs=1e-7), step
    assert reference[STEPS] < reference[1] / 2
