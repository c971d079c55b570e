import numpy as np
import pytest

from trainer.model.attention import CausalSelfAttention, causal_mask


def test_causal_mask_is_lower_triangular():
    np.testing.assert_array_equal(
        np.asarray(causal_mask(3))[0, 0], [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    )


def test_segment_mask_stays_inside_documents():
    mask = np.asarray(causal_mask(4, np.array([[1, 1, 2, 0]])))[0, 0]
    np.testing.assert_array_equal(mask, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def test_heads_attend_with_hidden_dim_over_num_heads():
    layer = CausalSelfAttention(num_heads=4, hidden_dim=32)
    layer.build((None, 5, 32))
    assert layer.head_dim == 8
    assert layer.qkv.kernel.shape == (32, 96)
    assert layer(np.zeros((2, 5, 32), "float32")).shape == (2, 5, 32)


def test_future_positions_do_not_change_the_past():
    layer = CausalSelfAttention(num_heads=2, hidden_dim=16)
    x = np.random.default_rng(0).normal(size=(1, 6, 16)).astype("float32")
    changed = x.copy()
    changed[:, 4:] += 1.0
    np.testing.assert_allclose(layer(x)[:, :4], layer(changed)[:, :4], atol=1e-6)
    assert not np.allclose(layer(x)[:, 4:], layer(changed)[:, 4:])


def test_other_documents_do_not_change_a_document():
    layer = CausalSelfAttention(num_heads=2, hidden_dim=16)
    segments = np.array([[1, 1, 1, 2, 2, 2]])
    x = np.random.default_rng(0).normal(size=(1, 6, 16)).astype("float32")
    changed = x.copy()
    changed[:, :3] += 1.0  # only document 1
    np.testing.assert_allclose(
        layer(x, segment_ids=segments)[:, 3:],
        layer(changed, segment_ids=segments)[:, 3:],
        atol=1e-6,
    )


def test_get_config_round_trips():
    layer = CausalSelfAttention(num_heads=2, hidden_dim=16, dropout=0.1, num_layers=3)
    clone = CausalSelfAttention.from_config(layer.get_config())
    assert (clone.num_heads, clone.hidden_dim, clone.dropout, clone.num_layers) == (2, 16, 0.1, 3)


def test_rejects_width_not_divisible_by_heads():
    with pytest.raises(ValueError, match="not divisible"):
        CausalSelfAttention(num_heads=3, hidden_dim=16)
