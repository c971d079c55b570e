import pytest

from pipeline.quality import lsh


def test_band_keys_name_the_band_and_agree_exactly_when_its_values_do():
    first = bytes(range(64))  # 16 values of 4 bytes
    second = first[:16] + b"\xff" + first[17:]  # the second band (of 4) differs
    a, b = lsh.band_keys(first, bands=4), lsh.band_keys(second, bands=4)
    assert [k[:2] for k in a] == [i.to_bytes(2, "big") for i in range(4)]
    assert len(a[0]) == 2 + lsh.KEY_DIGEST_BYTES
    assert [x == y for x, y in zip(a, b)] == [True, False, True, True]
    assert lsh.band_keys(first[:16] * 4, bands=4)[0][2:] == lsh.band_keys(
        first[:16] * 4, bands=4)[1][2:]  # equal values in different bands: same digest...
    assert len(set(lsh.band_keys(first[:16] * 4, bands=4))) == 4  # ...but distinct keys


def test_bands_must_divide_the_signature():
    with pytest.raises(ValueError, match="does not split"):
        lsh.band_keys(bytes(40), bands=3)
    with pytest.raises(ValueError, match="do not split into 3"):
        lsh.rows_per_band(perm=128, bands=3)
    assert lsh.rows_per_band(perm=128, bands=16) == 8


def test_the_s_curve_of_the_defaults():
    rows, bands = 8, 16
    assert lsh.threshold(rows=rows, bands=bands) == pytest.approx(0.707, abs=1e-3)
    assert lsh.candidate_probability(0.85, rows=rows, bands=bands) > 0.99
    assert lsh.candidate_probability(0.3, rows=rows, bands=bands) < 0.002
    assert lsh.candidate_probability(1.0, rows=rows, bands=bands) == 1.0


def test_a_band_group_becomes_a_star_from_its_lowest_member():
    assert lsh.star_edges([(2, 5), (0, 9), (2, 1), (0, 9)]) == [((0, 9), (2, 1)),
                                                                ((0, 9), (2, 5))]
    assert lsh.star_edges([(1, 1)]) == []
