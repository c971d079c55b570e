import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS
from trainer.model import GPT, GPTConfig, build_model

CFG = GPTConfig.from_preset("tiny", vocab_size=40, seq_len=8)


def tokens(seed=0, batch=2):
    return np.random.default_rng(seed).integers(0, 40, size=(batch, 8))


def test_logits_shape_and_dtype():
    logits = build_model(CFG)(tokens())
    assert logits.shape == (2, 8, 40) and logits.dtype == "float32"


def test_future_tokens_do_not_change_past_logits():
    model = build_model(CFG)
    x = tokens()
    changed = x.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % 40
    np.testing.assert_allclose(model(x)[:, :5], model(changed)[:, :5], atol=1e-5)
    assert not np.allclose(model(x)[:, 5:], model(changed)[:, 5:])


def test_segments_isolate_documents_and_restart_positions():
    model = build_model(dataclasses.replace(CFG, use_segments=True))
    x = tokens(batch=1)
    inputs = {
        TOKENS: x,
        SEGMENT_IDS: np.array([[1, 1, 1, 1, 2, 2, 2, 2]]),
        POSITIONS: np.array([[0, 1, 2, 3, 0, 1, 2, 3]]),
    }
    changed = dict(inputs, **{TOKENS: np.concatenate([(x[:, :4] + 1) % 40, x[:, 4:]], axis=1)})
    np.testing.assert_allclose(model(inputs)[:, 4:], model(changed)[:, 4:], atol=1e-5)
    # the second document alone, at positions 0..3, gives the same logits
    alone = {TOKENS: x[:, 4:], SEGMENT_IDS: np.ones((1, 4), int), POSITIONS: np.arange(4)[None]}
    np.testing.assert_allclose(model(inputs)[:, 4:], model(alone), atol=1e-5)


def test_segment_model_needs_segment_inputs():
    with pytest.raises(ValueError, match="segment_ids"):
        build_model(dataclasses.replace(CFG, use_segments=True))(tokens())


def test_get_config_rebuilds_the_same_model(tmp_path):
    model = build_model(dataclasses.replace(CFG, dropout=0.1))
    assert GPT.from_config(model.get_config()).gpt_config == model.gpt_config
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded(tokens()), model(tokens()), atol=1e-6)
    assert loaded.gpt_config == model.gpt_config


def test_bf16_computes_in_bfloat16_and_keeps_float32_weights():
    model = build_model(dataclasses.replace(CFG, dtype_policy="mixed_bfloat16"))
    assert model.blocks[0].attn.compute_dtype == "bfloat16"
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    assert model(tokens()).dtype == "float32"


def test_recompute_gives_the_same_gradients():
    plain = build_model(CFG)
    again = build_model(dataclasses.replace(CFG, recompute=True))
    again.set_weights(plain.get_weights())

    def grads(model):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(tokens(), training=True) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    for a, b in zip(grads(plain), grads(again)):
        np.testing.assert_allclose(
            tf.convert_to_tensor(a), tf.convert_to_tensor(b), rtol=1e-4, atol=1e-6
        )
