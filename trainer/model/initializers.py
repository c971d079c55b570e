"""GPT-2's weight initialization, shared by every layer of the model."""

from __future__ import annotations

import math

import keras

STDDEV = 0.02


def normal_init(*, residual_layers: int = 0) -> keras.initializers.Initializer:
    """N(0, 0.02); residual output projections get 0.02 / sqrt(2 * num_layers) (GPT-2, nanoGPT)."""
    stddev = STDDEV / math.sqrt(2 * residual_layers) if residual_layers else STDDEV
    return keras.initializers.RandomNormal(stddev=stddev)
