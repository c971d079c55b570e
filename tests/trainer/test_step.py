"""trainer/step.py against a direct computation on a tiny model and one literal batch."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from schemas.records import TOKENS
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.loss import masked_loss_sum
from trainer.model import GPTConfig, build_model
from trainer.step import make_batch_train_step, make_eval_step

PAD = 0
TOKENS_IN = np.array([[5, 6, 7, 8], [9, 3, 4, 0]], "int32")  # (B, T)
LABELS = np.array([[6, 7, 8, 9], [3, 4, 0, 0]], "int32")  # 6 real labels, 2 padding


class TwinReplicas(StrategyBackend):
    """One device that sums as if a second replica had seen the same batch."""

    def all_reduce_sum(self, value):
        return tf.nest.map_structure(lambda t: 2 * t, value)


def make_backend(replicas):
    cls = TwinReplicas if replicas == 2 else StrategyBackend
    return cls(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))


def tiny_model():
    keras.utils.set_random_seed(0)
    return build_model(GPTConfig.from_preset("tiny", vocab_size=16, seq_len=4))


def batches(backend):
    batch = tf.data.Dataset.from_tensors(({TOKENS: TOKENS_IN}, LABELS)).repeat()
    return iter(backend.distribute_dataset(lambda context: batch))


def direct_gradients(model):
    """Gradients of the batch's mean loss over real tokens, and that loss."""
    with tf.GradientTape() as tape:
        loss_sum, tokens = masked_loss_sum(LABELS, model({TOKENS: TOKENS_IN}), pad_id=PAD)
        loss = loss_sum / tokens
    grads = tape.gradient(loss, model.trainable_variables)
    return [tf.convert_to_tensor(g).numpy() for g in grads], float(loss)


@pytest.mark.parametrize("clip_norm,replicas", [(0.05, 1), (0.0, 2)])
def test_train_step_applies_the_clipped_gradient_of_the_global_mean_loss(clip_norm, replicas):
    model, backend = tiny_model(), make_backend(replicas)
    grads, loss = direct_gradients(model)
    norm = np.sqrt(sum(float((g**2).sum()) for g in grads))
    scale = min(1.0, clip_norm / norm) if clip_norm else 1.0
    if clip_norm:
        assert scale < 0.5  # the clip is active, not a no-op
    before = [v.numpy() for v in model.trainable_variables]
    with backend.scope():
        optimizer = keras.optimizers.SGD(learning_rate=1.0)  # w -= g: the update is the gradient
    step = make_batch_train_step(
        model=model, optimizer=optimizer, backend=backend, clip_norm=clip_norm, pad_id=PAD
    )
    # as the loop calls it: the batch fetched from the distributed iterator, then the step
    stats = {k: float(v) for k, v in step(*next(batches(backend))).items()}
    # Twin replicas each divide by the global token count (12) and their gradients are summed:
    # the same update, loss and norm as one replica with the batch.
    assert stats["loss"] == pytest.approx(loss, rel=1e-5)
    assert stats["grad_norm"] == pytest.approx(norm, rel=1e-4)  # reported before clipping
    assert (stats["tokens"], stats["local_tokens"]) == (6.0 * replicas, 6.0)
    for w0, g, w1 in zip(before, grads, model.trainable_variables):
        np.testing.assert_allclose(w1.numpy(), w0 - scale * g, rtol=1e-4, atol=1e-6)


def test_eval_step_sums_loss_and_tokens_over_replicas():
    model, backend = tiny_model(), make_backend(2)
    step = make_eval_step(model=model, backend=backend, pad_id=PAD)
    loss_sum, tokens = step(batches(backend)).numpy()
    expected_sum, expected_tokens = masked_loss_sum(
        LABELS, model({TOKENS: TOKENS_IN}, training=False), pad_id=PAD
    )
    assert tokens == 2 * float(expected_tokens) == 12.0
    assert loss_sum == pytest.approx(2 * float(expected_sum), rel=1e-5)
