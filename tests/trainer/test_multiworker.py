"""Two real MultiWorkerMirroredStrategy workers on 127.0.0.1 train together on the CPU."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from datagen.datasets import shard_tagged_dataset

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 240
STEPS = 6


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def start_workers(
    *, manifest: str, model_dir: str, out_dir: str, workers: int = 2, steps: int = STEPS,
    config: dict | None = None, seconds_per_batch: float = 0.0,
) -> list[tuple]:
    """``workers`` processes of one MultiWorkerMirroredStrategy cluster on 127.0.0.1, each
    (process, its result file, its log); ``config`` overrides ``TrainConfig`` fields."""
    ports = free_ports(workers)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    procs = []
    for index in range(workers):
        env = dict(
            os.environ,
            TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
            CUDA_VISIBLE_DEVICES="",
            TF_CPP_MIN_LOG_LEVEL="2",
        )
        out = os.path.join(out_dir, f"worker{index}.json")
        log = open(os.path.join(out_dir, f"worker{index}.log"), "w")  # noqa: SIM115 closed below
        argv = [sys.executable, "-m", "tests.trainer.multiworker_worker", manifest, model_dir,
                out, str(steps), json.dumps(config or {}), str(seconds_per_batch)]
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        procs.append((proc, out, log))
    return procs


def kill_workers(procs: list[tuple]) -> None:
    for proc, _, log in procs:
        if proc.poll() is None:  # a lone worker blocks forever in a collective
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def finish_workers(procs: list[tuple], *, out_dir: str) -> list[dict]:
    """Wait for the workers (killing them after TIMEOUT_S); what each one saw."""
    try:
        for proc, _, _ in procs:
            proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        kill_workers(procs)
    results = []
    for index, (proc, out, _) in enumerate(procs):
        if proc.returncode != 0:
            with open(os.path.join(out_dir, f"worker{index}.log")) as handle:
                tail = handle.read()[-3000:]
            pytest.fail(f"worker {index} exited with {proc.returncode}:\n{tail}")
        with open(out) as handle:
            results.append(json.load(handle))
    return results


def run_workers(*, manifest: str, model_dir: str, out_dir: str, **kwargs) -> list[dict]:
    procs = start_workers(manifest=manifest, model_dir=model_dir, out_dir=out_dir, **kwargs)
    return finish_workers(procs, out_dir=out_dir)


@pytest.mark.slow
def test_two_workers_train_in_lockstep(tmp_path):
    # worker 1 reads shards 1 and 3, whose records end in 3 PAD tokens: fewer real labels
    manifest = shard_tagged_dataset(
        str(tmp_path / "data"), records_per_shard=[20, 20, 20, 20], pad_odd_shards=3
    )
    model_dir = str(tmp_path / "run")
    chief, other = run_workers(manifest=manifest, model_dir=model_dir, out_dir=str(tmp_path),
                               config={"order": "files"})

    assert (chief["rank"], other["rank"]) == (0, 1)
    assert chief["world_size"] == other["world_size"] == chief["num_replicas"] == 2
    # identical weights at the end although each worker seeded its initialization differently
    assert chief["weights_sha256"] == other["weights_sha256"]
    # file-level sharding: disjoint shards whose union is the dataset
    assert set(chief["input_files"]).isdisjoint(other["input_files"])
    assert len(chief["input_files"]) + len(other["input_files"]) == 4
    # every step: the global batch's real tokens are the sum of the two workers' (4 records each)
    for mine, theirs in zip(chief["history"], other["history"]):
        assert (mine["local_tokens"], theirs["local_tokens"]) == (4 * 8, 4 * (8 - 3))
        assert mine["tokens"] == theirs["tokens"] == mine["local_tokens"] + theirs["local_tokens"]
        assert mine["loss"] == pytest.approx(theirs["loss"], rel=1e-6)
    assert [row["step"] for row in chief["history"]] == list(range(1, STEPS + 1))
    # only the chief wrote: one checkpoint, one export, one metrics row per step
    assert sorted(os.listdir(os.path.join(model_dir, "checkpoints"))) == [
        "checkpoint",
        f"ckpt-{STEPS}.data-00000-of-00001",
        f"ckpt-{STEPS}.index",
    ]
    assert os.path.exists(os.path.join(model_dir, "export", "model.keras"))
    with open(os.path.join(model_dir, "metrics.jsonl")) as handle:
        assert len(handle.readlines()) == STEPS
