import os
import re

import numpy as np
import tensorflow as tf

from trainer.checkpoint import Checkpointer, restore_model
from trainer.config import TrainConfig
from trainer.model import GPTConfig, build_model
from trainer.optim import build_optimizer

CFG = GPTConfig.from_preset("tiny", vocab_size=20, seq_len=4, dropout=0.1)


def make(model_dir, *, is_chief=True, keep=2):
    model = build_model(CFG)
    optimizer = build_optimizer(TrainConfig(steps=10, global_batch_size=2), num_replicas=1)
    optimizer.build(model.trainable_variables)
    seen = tf.Variable(0, dtype=tf.int64)
    return (
        model,
        optimizer,
        seen,
        Checkpointer(
            model_dir=model_dir,
            model=model,
            optimizer=optimizer,
            examples_seen=seen,
            keep=keep,
            is_chief=is_chief,
        ),
    )


def test_every_block_optimizer_and_position_round_trip(tmp_path):
    model, optimizer, seen, ckpt = make(str(tmp_path))
    optimizer.iterations.assign(7)
    seen.assign(56)
    path = ckpt.save(7)
    names = [name for name, _ in tf.train.list_variables(path)]
    assert any(
        re.search(r"h_1\W+attn\W+qkv\W+kernel", n) for n in names
    )  # Keras' block list is not lost
    assert any("seed_generator" in n for n in names)  # dropout RNG state resumes too
    fresh, fresh_opt, fresh_seen, fresh_ckpt = make(str(tmp_path))
    assert fresh_ckpt.restore_latest() == 7
    assert int(fresh_seen.numpy()) == 56
    for a, b in zip(model.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(optimizer.variables, fresh_opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_keeps_the_newest_n(tmp_path):
    _, optimizer, _, ckpt = make(str(tmp_path), keep=2)
    for step in range(1, 6):
        optimizer.iterations.assign(step)
        ckpt.save(step)
    kept = sorted(f for f in os.listdir(tmp_path / "checkpoints") if f.endswith(".index"))
    assert kept == ["ckpt-4.index", "ckpt-5.index"]


def test_only_the_chief_writes(tmp_path):
    _, _, _, ckpt = make(str(tmp_path), is_chief=False)
    assert ckpt.save(1) is None
    assert not os.path.exists(tmp_path / "checkpoints")


def test_new_run_starts_at_step_zero_and_evaluation_needs_a_checkpoint(tmp_path):
    model, _, _, ckpt = make(str(tmp_path))
    assert ckpt.restore_latest() == 0
    try:
        restore_model(model, model_dir=str(tmp_path))
    except FileNotFoundError as err:
        assert "train first" in str(err)
    else:
        raise AssertionError("restore_model found a checkpoint in an empty model_dir")
