import numpy as np

from trainer.model.block import DecoderBlock
from trainer.model.feedforward import FeedForward


def test_block_keeps_the_residual_shape():
    block = DecoderBlock(num_heads=2, hidden_dim=16, intermediate_dim=64)
    assert block(np.zeros((3, 5, 16), "float32")).shape == (3, 5, 16)


def test_block_get_config_round_trips():
    block = DecoderBlock(
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=64,
        dropout=0.1,
        num_layers=4,
        layer_norm_epsilon=1e-6,
    )
    config = DecoderBlock.from_config(block.get_config()).get_config()
    assert {
        k: config[k]
        for k in (
            "num_heads",
            "hidden_dim",
            "intermediate_dim",
            "dropout",
            "num_layers",
            "layer_norm_epsilon",
        )
    } == {
        "num_heads": 2,
        "hidden_dim": 16,
        "intermediate_dim": 64,
        "dropout": 0.1,
        "num_layers": 4,
        "layer_norm_epsilon": 1e-6,
    }


def test_feedforward_widens_then_projects_back():
    mlp = FeedForward(hidden_dim=8, intermediate_dim=32)
    assert mlp(np.zeros((2, 3, 8), "float32")).shape == (2, 3, 8)
    assert mlp.fc.kernel.shape == (8, 32) and mlp.proj.kernel.shape == (32, 8)
    assert FeedForward.from_config(mlp.get_config()).intermediate_dim == 32


def test_residual_projections_start_smaller_in_deeper_models():
    shallow = FeedForward(hidden_dim=64, intermediate_dim=256, num_layers=1)
    deep = FeedForward(hidden_dim=64, intermediate_dim=256, num_layers=16)
    for layer in (shallow, deep):
        layer.build((None, 64))
    assert np.std(deep.proj.kernel.numpy()) < np.std(shallow.proj.kernel.numpy()) / 2
