"""The key/value cache of autoregressive decoding: one tensor for the whole model.

Layout: (num_layers, 2, B, num_heads, S, head_dim); index 0 of the second axis holds keys,
index 1 values, and S is the longest sequence the cache serves (at most ``seq_len``). Position
p of a sequence lives at index p of the S axis. Slots at or after the next position hold
stale or zero values; attention masks them out (``decode_mask``), so they are never read.

One tensor, not a list per layer, so a ``tf.while_loop`` carries it as one loop variable
whose shape never changes.
"""

from __future__ import annotations

import tensorflow as tf

KEYS, VALUES = 0, 1


def empty(*, num_layers: int, batch_size, num_heads: int, length, head_dim: int, dtype):
    """Zeros of shape (num_layers, 2, B, nh, S, hs) (``batch_size``, ``length`` may be tensors)."""
    return tf.zeros((num_layers, 2, batch_size, num_heads, length, head_dim), dtype=dtype)


def write(cache: tf.Tensor, new: tf.Tensor, *, index) -> tf.Tensor:
    """``cache`` (B, nh, S, hs) with ``new`` (B, nh, T, hs) written at positions index..index+T-1.

    A plain TensorFlow op (not XLA's dynamic_update_slice, which Keras' ``slice_update`` uses)
    so the exported graph runs in any TensorFlow runtime, TF Serving included.
    """
    index = tf.cast(index, tf.int32)
    end = index + tf.shape(new)[2]
    zero = tf.constant(0, tf.int32)
    return tf.raw_ops.TensorStridedSliceUpdate(
        input=cache,
        begin=tf.stack([zero, zero, index, zero]),
        end=tf.stack([zero, zero, end, zero]),
        strides=tf.ones([4], tf.int32),
        value=new,
        begin_mask=0b1011,  # every axis but the position axis is taken whole
        end_mask=0b1011,
    )


def decode_mask(*, index, length, cache_length) -> tf.Tensor:
    """(1, 1, T, S) booleans: query i (at position index + i) may see cache slots <= index + i."""
    queries = tf.cast(index, tf.int32) + tf.range(length)[:, None]  # (T, 1)
    slots = tf.range(cache_length)[None, :]  # (1, S)
    return (slots <= queries)[None, None]  # (1, 1, T, S)
