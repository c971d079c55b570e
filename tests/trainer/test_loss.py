import math

import numpy as np

from trainer.loss import masked_loss_sum


def test_uniform_logits_cost_log_vocab_per_real_token():
    labels = np.array([[2, 3, 0]])  # the last label is padding
    loss_sum, tokens = masked_loss_sum(labels, np.zeros((1, 3, 4), "float32"), pad_id=0)
    assert float(tokens) == 2.0
    assert float(loss_sum) == np.float32(2 * math.log(4))


def test_padding_costs_nothing_however_wrong():
    logits = np.zeros((1, 2, 3), "float32")
    logits[0, 1, 2] = 50.0  # confidently wrong about the padded position
    loss_sum, tokens = masked_loss_sum(np.array([[1, 0]]), logits, pad_id=0)
    assert float(tokens) == 1.0
    assert np.isclose(float(loss_sum), math.log(3))


def test_hand_computed_cross_entropy():
    logits = np.log(np.array([[[0.5, 0.25, 0.25]]], "float32"))
    loss_sum, _ = masked_loss_sum(np.array([[1]]), logits, pad_id=0)
    assert np.isclose(float(loss_sum), math.log(4))
