"""The position-wise feed-forward network of a decoder block (nanoGPT's ``MLP``)."""

from __future__ import annotations

import keras

from trainer.model.initializers import normal_init


@keras.saving.register_keras_serializable(package="pilepack")
class FeedForward(keras.layers.Layer):
    """Dense(intermediate_dim, gelu) -> Dense(hidden_dim) -> Dropout.

    Args:
        hidden_dim: input and output width C.
        intermediate_dim: inner width (4 C in GPT-2).
        dropout: on the output.
        num_layers: depth of the whole model, to scale the output projection's init.
    """

    def __init__(
        self,
        *,
        hidden_dim: int,
        intermediate_dim: int,
        dropout: float = 0.0,
        num_layers: int = 1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.num_layers = num_layers
        self.fc = keras.layers.Dense(
            intermediate_dim,
            activation="gelu",
            kernel_initializer=normal_init(),
            dtype=self.dtype_policy,
            name="fc",
        )
        self.proj = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=normal_init(residual_layers=num_layers),
            dtype=self.dtype_policy,
            name="proj",
        )
        self.drop = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        self.fc.build(input_shape)
        self.proj.build(tuple(input_shape[:-1]) + (self.intermediate_dim,))

    def call(self, x, training=None):
        h = self.fc(x)  # (B, T, F)
        return self.drop(self.proj(h), training=training)  # (B, T, C)

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "num_layers": self.num_layers,
        }
