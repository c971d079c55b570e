"""Causal multi-head self-attention, optionally confined to document segments."""

from __future__ import annotations

import math

import keras
from keras import ops

from trainer.model import kv_cache
from trainer.model.initializers import normal_init

_MASKED = -1e9  # finite: a fully masked row (impossible here, see causal_mask) must not give NaN


def causal_mask(length, segment_ids=None):
    """Which keys each query may attend to, as booleans.

    Args:
        length: sequence length T.
        segment_ids: optional (B, T) ints; queries then see only keys of their own segment.

    Returns:
        (1, 1, T, T) without segments, (B, 1, T, T) with: True where attention is allowed.
        The diagonal is always allowed, so no row is empty (padding is segment 0 and sees
        itself).
    """
    rows = ops.expand_dims(ops.arange(length), 1)  # (T, 1)
    cols = ops.expand_dims(ops.arange(length), 0)  # (1, T)
    mask = ops.expand_dims(ops.expand_dims(cols <= rows, 0), 0)  # (1, 1, T, T)
    if segment_ids is None:
        return mask
    same = ops.expand_dims(segment_ids, 2) == ops.expand_dims(segment_ids, 1)  # (B, T, T)
    return ops.logical_and(mask, ops.expand_dims(same, 1))  # (B, 1, T, T)


@keras.saving.register_keras_serializable(package="pilepack")
class CausalSelfAttention(keras.layers.Layer):
    """nanoGPT's ``CausalSelfAttention``: one fused qkv projection, heads of hidden_dim/num_heads.

    Args:
        num_heads: number of heads; each attends with ``hidden_dim // num_heads`` dimensions
            (the original blog's bug was a key_dim of the full width).
        hidden_dim: input and output width C.
        dropout: on the attention weights and on the output.
        num_layers: depth of the whole model, to scale the output projection's init (GPT-2).
    """

    def __init__(
        self,
        *,
        num_heads: int,
        hidden_dim: int,
        dropout: float = 0.0,
        num_layers: int = 1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(f"hidden_dim {hidden_dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.num_layers = num_layers
        self.head_dim = hidden_dim // num_heads
        self.qkv = keras.layers.Dense(
            3 * hidden_dim, kernel_initializer=normal_init(), dtype=self.dtype_policy, name="qkv"
        )
        self.proj = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=normal_init(residual_layers=num_layers),
            dtype=self.dtype_policy,
            name="proj",
        )
        self.attn_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.resid_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        self.qkv.build(input_shape)
        self.proj.build(input_shape)

    def call(self, x, segment_ids=None, training=None):
        q, k, v = self._heads(x)  # each (B, nh, T, hs)
        mask = causal_mask(ops.shape(x)[1], segment_ids)  # (1 or B, 1, T, T)
        return self._attend(q, k, v, mask, training=training)

    def call_cached(self, x, cache, index):
        """Attention of new positions over themselves and every earlier, cached position.

        Args:
            x: (B, T, C), the inputs at positions index .. index + T - 1.
            cache: (2, B, nh, S, hs) keys and values of positions < index (``kv_cache``).
            index: position of x[:, 0] (a scalar, possibly a tensor).

        Returns:
            (B, T, C) outputs, equal to ``call`` on the whole prefix at these positions
            (without segments, as at inference), and the cache with these positions written.
        """
        q, k, v = self._heads(x)  # each (B, nh, T, hs)
        keys = kv_cache.write(cache[kv_cache.KEYS], k, index=index)  # (B, nh, S, hs)
        values = kv_cache.write(cache[kv_cache.VALUES], v, index=index)  # (B, nh, S, hs)
        mask = kv_cache.decode_mask(
            index=index, length=ops.shape(x)[1], cache_length=ops.shape(keys)[2]
        )  # (1, 1, T, S)
        y = self._attend(q, keys, values, mask, training=False)
        return y, ops.stack([keys, values])

    def _heads(self, x):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        nh, hs = self.num_heads, self.head_dim
        qkv = self.qkv(x)  # (B, T, 3C)
        qkv = ops.reshape(qkv, (batch, length, 3, nh, hs))  # (B, T, 3, nh, hs)
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, B, nh, T, hs)
        return qkv[0], qkv[1], qkv[2]  # each (B, nh, T, hs)

    def _attend(self, q, k, v, mask, *, training):
        """Queries q (B, nh, T, hs) over keys/values k, v (B, nh, S, hs) where ``mask``."""
        batch, length = ops.shape(q)[0], ops.shape(q)[2]
        att = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # (B, nh, T, S)
        att = ops.cast(att, "float32") * (1.0 / math.sqrt(self.head_dim))  # fp32 under bf16
        att = ops.where(mask, att, _MASKED)  # (B, nh, T, S)
        att = ops.cast(ops.softmax(att, axis=-1), self.compute_dtype)
        att = self.attn_dropout(att, training=training)
        y = ops.matmul(att, v)  # (B, nh, T, hs)
        y = ops.reshape(
            ops.transpose(y, (0, 2, 1, 3)), (batch, length, self.hidden_dim)
        )  # (B, T, C)
        return self.resid_dropout(self.proj(y), training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
            "num_layers": self.num_layers,
        }
