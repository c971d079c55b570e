"""trainer/model/kv_cache.py and the models' cached path: the same logits as the training path."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS
from trainer.model import GPTConfig, build_model, kv_cache

CFG = GPTConfig.from_preset("tiny", vocab_size=40, seq_len=12)


def test_write_replaces_only_the_given_positions():
    cache = tf.zeros((1, 1, 5, 2))
    new = tf.constant([[[[1.0, 2.0], [3.0, 4.0]]]])  # (1, 1, T=2, 2)
    written = kv_cache.write(cache, new, index=2).numpy()[0, 0]
    np.testing.assert_array_equal(written, [[0, 0], [0, 0], [1, 2], [3, 4], [0, 0]])


def test_decode_mask_lets_each_query_see_its_past_only():
    mask = kv_cache.decode_mask(index=2, length=2, cache_length=5).numpy()[0, 0]
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])


def cached_logits(model, tokens, *, prefill):
    """Prefill ``prefill`` positions in one call, then one position per call."""
    cache = model.init_cache(tokens.shape[0], CFG.seq_len)
    logits, cache = model.call_cached(tokens[:, :prefill], cache, 0)
    steps = [logits]
    for t in range(prefill, tokens.shape[1]):
        logits, cache = model.call_cached(tokens[:, t : t + 1], cache, t)
        steps.append(logits)
    return np.concatenate(steps, axis=1)


@pytest.mark.parametrize("prefill", [1, 5, 12])
def test_cached_logits_equal_the_training_path(prefill):
    model = build_model(CFG)
    tokens = np.random.default_rng(0).integers(0, 40, size=(2, 12)).astype("int32")
    np.testing.assert_allclose(
        cached_logits(model, tokens, prefill=prefill), model(tokens), atol=1e-5
    )


def test_a_segment_model_decodes_one_document():
    model = build_model(dataclasses.replace(CFG, use_segments=True))
    tokens = np.random.default_rng(1).integers(0, 40, size=(1, 12)).astype("int32")
    one_document = {
        TOKENS: tokens,
        SEGMENT_IDS: np.ones_like(tokens),
        POSITIONS: np.arange(12)[None],
    }
    np.testing.assert_allclose(
        cached_logits(model, tokens, prefill=4), model(one_document), atol=1e-5
    )


def test_the_cache_holds_every_layer_in_the_compute_dtype():
    model = build_model(dataclasses.replace(CFG, dtype_policy="mixed_bfloat16"))
    cache = model.init_cache(3, 7)
    assert cache.shape == (2, 2, 3, 2, 7, 32) and cache.dtype == tf.bfloat16
    logits, cache = model.call_cached(np.zeros((3, 2), "int32"), cache, 0)
    assert logits.dtype == tf.float32 and cache.shape == (2, 2, 3, 2, 7, 32)
