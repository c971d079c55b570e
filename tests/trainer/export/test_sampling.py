"""trainer/export/sampling.py: greedy, top-k and top-p on tiny literal logits."""

import numpy as np
import tensorflow as tf

from trainer.export.sampling import _REMOVED, next_token, top_k_filter, top_p_filter

LOGITS = tf.constant([[1.0, 3.0, 2.0, 0.0], [0.0, 0.0, 5.0, 4.0]])


def choose(logits=LOGITS, *, temperature=1.0, top_k=0, top_p=1.0, seed=0):
    return next_token(
        logits,
        temperature=tf.constant(temperature),
        top_k=tf.constant(top_k),
        top_p=tf.constant(top_p),
        seed=tf.constant([seed, 0], tf.int64),
    ).numpy()


def test_top_k_keeps_the_k_largest_of_each_row():
    kept = top_k_filter(LOGITS, tf.constant(2)).numpy() > _REMOVED
    np.testing.assert_array_equal(kept, [[0, 1, 1, 0], [0, 0, 1, 1]])
    assert (top_k_filter(LOGITS, tf.constant(0)).numpy() == LOGITS.numpy()).all()  # 0: all


def test_top_p_keeps_the_fewest_tokens_that_reach_p():
    logits = tf.math.log(tf.constant([[0.5, 0.3, 0.2]]))  # the docstring's example

    def kept(p):
        return (top_p_filter(logits, tf.constant(p)).numpy() > _REMOVED)[0].tolist()

    assert kept(0.7) == [True, True, False]
    assert kept(0.5) == [True, False, False]
    assert kept(0.01) == [True, False, False]  # the most likely token always stays
    assert kept(1.0) == [True, True, True]


def test_zero_temperature_is_greedy():
    np.testing.assert_array_equal(choose(temperature=0.0), [1, 2])


def test_sampling_stays_in_the_filtered_set_and_follows_the_seed():
    draws = np.stack([choose(top_k=2, seed=seed) for seed in range(40)])  # (40, B)
    assert set(draws[:, 0]) == {1, 2} and set(draws[:, 1]) == {2, 3}
    np.testing.assert_array_equal(choose(top_k=2, seed=7), choose(top_k=2, seed=7))
    np.testing.assert_array_equal(choose(top_k=1, seed=3), [1, 2])  # top-1 is greedy
    np.testing.assert_array_equal(choose(top_p=0.01, seed=3), [1, 2])
