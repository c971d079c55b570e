"""One pre-LayerNorm decoder block (GPT-2 / nanoGPT ``Block``)."""

from __future__ import annotations

import keras

from trainer.model.attention import CausalSelfAttention
from trainer.model.feedforward import FeedForward


@keras.saving.register_keras_serializable(package="pilepack")
class DecoderBlock(keras.layers.Layer):
    """x + attn(ln_1(x)), then x + mlp(ln_2(x)).

    The original blog's block was post-LN and referenced an undefined ``out1``; this one is the
    pre-LN form GPT-2 uses, which trains deep stacks without warm-up tricks.

    Args:
        num_heads, hidden_dim, intermediate_dim, dropout: as in ``GPTConfig``.
        num_layers: depth of the whole model (residual init scaling).
        layer_norm_epsilon: LayerNorm epsilon.
    """

    def __init__(
        self,
        *,
        num_heads: int,
        hidden_dim: int,
        intermediate_dim: int,
        dropout: float = 0.0,
        num_layers: int = 1,
        layer_norm_epsilon: float = 1e-5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.num_layers = num_layers
        self.layer_norm_epsilon = layer_norm_epsilon
        policy = self.dtype_policy
        self.ln_1 = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ln_1"
        )
        self.attn = CausalSelfAttention(
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            dropout=dropout,
            num_layers=num_layers,
            dtype=policy,
            name="attn",
        )
        self.ln_2 = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ln_2"
        )
        self.mlp = FeedForward(
            hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            num_layers=num_layers,
            dtype=policy,
            name="mlp",
        )

    def build(self, input_shape):
        for layer in (self.ln_1, self.attn, self.ln_2, self.mlp):
            layer.build(input_shape)

    def call(self, x, segment_ids=None, training=None):
        x = x + self.attn(self.ln_1(x), segment_ids=segment_ids, training=training)  # (B, T, C)
        return x + self.mlp(self.ln_2(x), training=training)  # (B, T, C)

    def call_cached(self, x, cache, index):
        """``call`` at positions index.. of x (B, T, C), attending to ``cache`` (2, B, nh, S, hs)
        for earlier positions; returns (B, T, C) and the cache with these positions added."""
        h, cache = self.attn.call_cached(self.ln_1(x), cache, index)
        x = x + h  # (B, T, C)
        return x + self.mlp(self.ln_2(x)), cache

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "num_layers": self.num_layers,
            "layer_norm_epsilon": self.layer_norm_epsilon,
        }
