"""The per-replica training and evaluation steps, compiled once per run."""

from __future__ import annotations

import keras
import tensorflow as tf

from trainer.distribute.base import Backend
from trainer.loss import masked_loss_sum


def make_batch_train_step(
    *,
    model: keras.Model,
    optimizer,
    backend: Backend,
    clip_norm: float,
    pad_id: int,
    xla: bool = False,
):
    """A ``tf.function(inputs, labels) -> {loss, grad_norm, tokens, local_tokens}`` for one
    step on a batch of the distributed iterator (the loop fetches it, to time the input wait).

    Each replica divides its summed loss by the global number of real tokens, so the
    all-reduced (summed) gradient is the gradient of the global mean loss; the global
    gradient is clipped, then applied identically on every replica.
    """
    variables = model.trainable_variables

    def replica_step(inputs, labels):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)  # (B, T, V)
            loss_sum, tokens = masked_loss_sum(labels, logits, pad_id=pad_id)
            totals = backend.all_reduce_sum(tf.stop_gradient(tf.stack([loss_sum, tokens])))
            loss = loss_sum / tf.maximum(totals[1], 1.0)
        grads = backend.gradients(tape, loss, variables)
        if clip_norm > 0:
            grads, grad_norm = tf.clip_by_global_norm(grads, clip_norm)
        else:
            grad_norm = tf.linalg.global_norm(grads)
        optimizer.apply(grads, variables)
        return {
            "loss": totals[0] / tf.maximum(totals[1], 1.0),
            "grad_norm": grad_norm,
            "tokens": totals[1],
            "local_tokens": tokens,
        }

    if xla:
        replica_step = tf.function(replica_step, jit_compile=True)

    @tf.function
    def train_step(inputs, labels):
        stats = backend.run(replica_step, args=(inputs, labels))
        local_tokens = tf.add_n(
            backend.strategy.experimental_local_results(stats.pop("local_tokens"))
        )
        return {
            **{k: backend.first_local(v) for k, v in stats.items()},
            "local_tokens": local_tokens,
        }

    return train_step


def make_eval_step(*, model: keras.Model, backend: Backend, pad_id: int, xla: bool = False):
    """A ``tf.function(iterator) -> [loss_sum, tokens]`` summed over all replicas."""

    def replica_step(inputs, labels):
        logits = model(inputs, training=False)  # (B, T, V)
        return backend.all_reduce_sum(tf.stack(masked_loss_sum(labels, logits, pad_id=pad_id)))

    if xla:
        replica_step = tf.function(replica_step, jit_compile=True)

    @tf.function
    def eval_step(iterator):
        inputs, labels = next(iterator)
        return backend.first_local(backend.run(replica_step, args=(inputs, labels)))

    return eval_step
