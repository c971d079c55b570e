"""permutation.py: a bijection of [0, n) for every n, its inverse, one order per seed."""

import numpy as np
import pytest

from schemas.permutation import Permutation


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 257, 1000, 65537])
def test_every_position_maps_to_exactly_one_record(n):
    permutation = Permutation(n=n, seed=7)
    records = permutation.forward(np.arange(n))
    assert sorted(records.tolist()) == list(range(n))
    assert permutation.inverse(records).tolist() == list(range(n))


def test_deterministic_per_seed_and_different_across_seeds():
    n = 1000
    first = Permutation(n=n, seed=0).forward(np.arange(n))
    assert np.array_equal(first, Permutation(n=n, seed=0).forward(np.arange(n)))
    assert not np.array_equal(first, Permutation(n=n, seed=1).forward(np.arange(n)))
    assert not np.array_equal(first, np.arange(n))
    # Any range maps on its own, like the whole: a worker needs only its shard's positions.
    assert np.array_equal(Permutation(n=n, seed=0).forward(np.arange(300, 420)), first[300:420])


def test_well_mixed():
    n = 10_000
    records = Permutation(n=n, seed=3).forward(np.arange(n))
    # Neighbouring positions come from far apart; the first tenth samples the whole range.
    assert np.median(np.abs(np.diff(records))) > n / 10
    assert np.histogram(records[: n // 10], bins=10, range=(0, n))[0].min() > 60


def test_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"in \[0, 5\)"):
        Permutation(n=5, seed=0).forward([5])
