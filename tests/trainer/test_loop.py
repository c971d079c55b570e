"""trainer/loop.py: the loss falls, only the chief writes, a resumed run continues exactly."""

import json
import math
import os
import shutil

import keras
import pytest
import tensorflow as tf

from datagen.datasets import learnable_dataset
from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.model import GPTConfig

STEPS = 6


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return manifest.load(learnable_dataset(str(tmp_path_factory.mktemp("data"))))


def single(*, rank=0, world_size=1):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    return StrategyBackend(name="single", strategy=strategy, rank=rank, world_size=world_size)


def train(data, model_dir, *, steps=STEPS, backend=None):
    keras.utils.set_random_seed(0)
    return loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train_config=TrainConfig(
            steps=steps,
            global_batch_size=8,
            learning_rate=1e-2,
            warmup_steps=0,
            log_every=1,
            checkpoint_every=2,
            keep_checkpoints=10,
        ),
        backend=backend or single(),
        train_data=data,
        model_dir=str(model_dir),
    )


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("reference")
    return model_dir, train(data, model_dir)


def test_loss_is_finite_and_falls(reference):
    _, result = reference
    losses = [row["loss"] for row in result.history]
    assert [row["step"] for row in result.history] == list(range(1, STEPS + 1))
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[0] == pytest.approx(math.log(32), rel=0.1)  # a fresh model guesses uniformly
    assert losses[-1] < losses[0] - 0.2
    assert all(row["tokens"] == 8 * 16 for row in result.history)
    assert len(result.input_files) == 2  # one process reads both shards


def test_the_chief_writes_run_record_metrics_checkpoints_and_export(reference):
    model_dir, result = reference
    with open(model_dir / "metrics.jsonl") as handle:
        rows = [json.loads(line) for line in handle]
    assert rows == result.history
    checkpoints = sorted(f for f in os.listdir(model_dir / "checkpoints") if f.endswith(".index"))
    assert checkpoints == ["ckpt-2.index", "ckpt-4.index", "ckpt-6.index"]
    with open(model_dir / "run.json") as handle:
        record = json.load(handle)
    assert record["train"]["steps"] == STEPS and record["model"]["vocab_size"] == 32
    assert (model_dir / "export" / "model.keras").exists()


def test_a_worker_that_is_not_the_chief_writes_nothing(data, tmp_path):
    result = train(data, tmp_path / "run", steps=2, backend=single(rank=1, world_size=2))
    assert [row["step"] for row in result.history] == [1, 2]  # it still trains
    assert not (tmp_path / "run").exists()


def test_a_resumed_run_continues_at_the_saved_step_with_the_same_batches(reference, data, tmp_path):
    """Killed after the checkpoint of step 4, the rerun repeats steps 5 and 6 exactly."""
    model_dir, uninterrupted = reference
    shutil.copy(model_dir / "run.json", tmp_path / "run.json")
    shutil.copytree(model_dir / "checkpoints", tmp_path / "checkpoints",
                    ignore=shutil.ignore_patterns("ckpt-6.*", "checkpoint"))
    # tf.train.CheckpointManager's index of checkpoints, as it was after step 4.
    (tmp_path / "checkpoints" / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-4"\n'
        'all_model_checkpoint_paths: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-4"\n'
    )
    resumed = train(data, tmp_path)
    assert resumed.start_step == 4
    assert [row["step"] for row in resumed.history] == [5, 6]
    for row, expected in zip(resumed.history, uninterrupted.history[4:]):
        assert row["loss"] == pytest.approx(expected["loss"], rel=1e-6)
