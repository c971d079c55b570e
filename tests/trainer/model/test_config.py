import dataclasses

import pytest

from trainer.model import PRESETS, GPTConfig, build_model, param_count


def test_preset_takes_vocab_and_seq_len_from_the_data():
    cfg = GPTConfig.from_preset("125m", vocab_size=32768, seq_len=1024)
    assert (cfg.num_layers, cfg.num_heads, cfg.hidden_dim, cfg.intermediate_dim) == (
        12,
        12,
        768,
        3072,
    )
    assert (cfg.vocab_size, cfg.seq_len) == (32768, 1024)


@pytest.mark.parametrize("overrides", [{}, {"intermediate_dim": 100}, {"use_segments": True}])
def test_param_count_matches_keras(overrides):
    cfg = GPTConfig.from_preset("tiny", vocab_size=50, seq_len=12, **overrides)
    assert build_model(cfg).count_params() == param_count(cfg)


def test_param_count_of_125m_by_hand():
    # 12 blocks of 12 d^2 + 13 d, embeddings (V + T) d, final LayerNorm 2 d, untied head V d
    d, v, t = 768, 50257, 1024
    cfg = GPTConfig.from_preset("125m", vocab_size=v, seq_len=t)
    assert (
        param_count(cfg) == 12 * (12 * d * d + 13 * d) + (v + t) * d + 2 * d + v * d
    )  # 163,037,184


def test_every_preset_is_valid_and_grows():
    counts = [
        param_count(GPTConfig.from_preset(name, vocab_size=32768, seq_len=2048)) for name in PRESETS
    ]
    assert counts == sorted(counts)


def test_round_trips_through_a_dict():
    cfg = GPTConfig.from_preset(
        "tiny", vocab_size=50, seq_len=12, dropout=0.1, dtype_policy="mixed_bfloat16"
    )
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown GPTConfig fields"):
        GPTConfig.from_dict({**cfg.to_dict(), "n_embd": 3})


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"num_heads": 3}, "not divisible"),
        ({"dropout": 1.0}, "dropout"),
        ({"dtype_policy": "float16"}, "dtype_policy"),
        ({"vocab_size": 0}, "vocab_size"),
    ],
)
def test_rejects_bad_values(bad, match):
    base = dataclasses.asdict(GPTConfig.from_preset("tiny", vocab_size=50, seq_len=12))
    with pytest.raises(ValueError, match=match):
        GPTConfig(**{**base, **bad})


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="--preset"):
        GPTConfig.from_preset("7b", vocab_size=50, seq_len=12)
