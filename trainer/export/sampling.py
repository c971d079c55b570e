"""Choosing the next token from logits: greedy, or temperature + top-k + top-p sampling.

Graph code: every option is a tensor, so one exported signature serves them all. Sampling is
stateless (``tf.random.stateless_categorical``), seeded with (seed, position): the same request
gives the same text, whichever server answers it.
"""

from __future__ import annotations

import tensorflow as tf

_REMOVED = -1e9  # finite: exp() of it is 0, and no NaN arises where every logit is equal


def top_k_filter(logits: tf.Tensor, k) -> tf.Tensor:
    """Logits (B, V) with all but the ``k`` largest of each row set to -1e9 (k <= 0: all kept).

    Ties with the k-th largest are kept.
    """
    vocab = tf.shape(logits)[-1]
    k = tf.where(k > 0, tf.minimum(k, vocab), vocab)
    kth = tf.math.top_k(logits, k=k, sorted=True).values[:, -1:]  # (B, 1)
    return tf.where(logits < kth, _REMOVED, logits)


def top_p_filter(logits: tf.Tensor, p) -> tf.Tensor:
    """Logits (B, V) keeping, per row, the fewest most likely tokens whose probabilities sum to
    at least ``p`` (nucleus sampling; the most likely token is always kept, p >= 1 keeps all).

    For example probabilities (0.5, 0.3, 0.2) with p = 0.7 keep the first two: 0.5 alone is
    short of 0.7, 0.5 + 0.3 reaches it.
    """
    ordered = tf.sort(logits, axis=-1, direction="DESCENDING")  # (B, V)
    before = tf.math.cumsum(tf.nn.softmax(ordered, axis=-1), axis=-1, exclusive=True)  # (B, V)
    first = tf.range(tf.shape(logits)[-1]) == 0  # (V,)
    keep = tf.logical_or(before < tf.cast(p, before.dtype), first)  # (B, V)
    cutoff = tf.reduce_min(tf.where(keep, ordered, ordered.dtype.max), axis=-1, keepdims=True)
    return tf.where(logits < cutoff, _REMOVED, logits)


def next_token(logits: tf.Tensor, *, temperature, top_k, top_p, seed) -> tf.Tensor:
    """The next token of each row of float32 ``logits`` (B, V), as int32 (B,).

    Args:
        logits: float32 (B, V).
        temperature: scalar; <= 0 means greedy (argmax), else logits are divided by it.
        top_k: scalar int; sample among the k most likely tokens (<= 0: all).
        top_p: scalar float; sample within the nucleus of probability p (>= 1: all).
        seed: int64 (2,), the stateless seed of this step.
    """

    def greedy():
        return tf.argmax(logits, axis=-1, output_type=tf.int32)

    def sample():
        scaled = logits / tf.cast(temperature, logits.dtype)
        scaled = tf.cond(top_k > 0, lambda: top_k_filter(scaled, top_k), lambda: scaled)
        scaled = tf.cond(top_p < 1.0, lambda: top_p_filter(scaled, top_p), lambda: scaled)
        drawn = tf.random.stateless_categorical(scaled, 1, seed=seed, dtype=tf.int32)  # (B, 1)
        return drawn[:, 0]

    return tf.cond(temperature > 0.0, sample, greedy)
