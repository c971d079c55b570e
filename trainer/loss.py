"""The language-modelling loss: cross-entropy from logits over real (non-padding) labels."""

from __future__ import annotations

import tensorflow as tf


def masked_loss_sum(
    labels: tf.Tensor, logits: tf.Tensor, *, pad_id: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """Summed cross-entropy and the count of labels that are not ``pad_id``.

    Args:
        labels: (B, T) int token ids; ``pad_id`` marks padding of a packed final record.
        logits: (B, T, V) float32.
        pad_id: the tokenizer's pad id (the manifest's ``special_ids.pad``).

    Returns:
        (loss_sum, tokens), float32 scalars. The mean over a global batch is the all-reduced
        loss_sum over the all-reduced tokens, so every real token weighs the same on every rank.
    """
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits
    )  # (B, T)
    mask = tf.cast(tf.not_equal(labels, pad_id), per_token.dtype)  # (B, T)
    return tf.reduce_sum(per_token * mask), tf.reduce_sum(mask)
