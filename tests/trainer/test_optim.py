import numpy as np
import pytest

from trainer.config import TrainConfig
from trainer.optim import build_optimizer, learning_rate_schedule


def lr_at(schedule, step):
    return float(schedule(step))


def test_warmup_then_cosine_to_the_floor():
    cfg = TrainConfig(
        steps=110, global_batch_size=8, learning_rate=1e-3, warmup_steps=10, min_lr_ratio=0.1
    )
    schedule = learning_rate_schedule(cfg, num_replicas=1)
    assert lr_at(schedule, 0) == pytest.approx(1e-4)
    assert lr_at(schedule, 5) == pytest.approx(5.5e-4)
    assert lr_at(schedule, 10) == pytest.approx(1e-3)
    assert lr_at(schedule, 60) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))
    assert lr_at(schedule, 110) == pytest.approx(1e-4)


def test_scale_lr_multiplies_by_replicas():
    cfg = TrainConfig(
        steps=10, global_batch_size=8, learning_rate=1e-3, warmup_steps=0, scale_lr=True
    )
    assert lr_at(learning_rate_schedule(cfg, num_replicas=4), 0) == pytest.approx(4e-3)
    unscaled = TrainConfig(steps=10, global_batch_size=8, learning_rate=1e-3, warmup_steps=0)
    assert lr_at(learning_rate_schedule(unscaled, num_replicas=4), 0) == pytest.approx(1e-3)


def test_weight_decay_skips_biases_and_layer_norms():
    import keras

    optimizer = build_optimizer(TrainConfig(steps=10, global_batch_size=8), num_replicas=1)
    dense, norm = keras.layers.Dense(2), keras.layers.LayerNormalization()
    dense.build((None, 2))
    norm.build((None, 2))
    optimizer.build([dense.kernel, dense.bias, norm.gamma, norm.beta])
    decays = [
        optimizer._use_weight_decay(v) for v in (dense.kernel, dense.bias, norm.gamma, norm.beta)
    ]
    assert decays == [True, False, False, False]


def test_bad_flags_are_named():
    with pytest.raises(ValueError, match="--steps"):
        TrainConfig(steps=0, global_batch_size=8)
    with pytest.raises(ValueError, match="--min_lr_ratio"):
        TrainConfig(steps=1, global_batch_size=8, min_lr_ratio=2.0)
    assert np.isfinite(TrainConfig(steps=1, global_batch_size=1).learning_rate)
