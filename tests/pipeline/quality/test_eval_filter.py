"""The evaluation n-grams' Bloom filter: it never rejects an n-gram added to it, its size is
capped whatever the evaluation set, its false positives are as rare as it reports, and it
round-trips through its file."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipeline.quality import eval_filter
from pipeline.quality.eval_filter import EvalFilter, FilterFn


def _hashes(seed: int, count: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)


@pytest.mark.parametrize("size_bits,probes,count", [
    (1 << 16, 8, 4000), (1 << 16, 3, 50_000), (1 << 10, 1, 10_000), (1 << 20, 5, 100_000)])
def test_an_added_hash_is_never_rejected(size_bits, probes, count):
    """Over many random hashes and sizes, from sparse to saturated filters."""
    bloom = EvalFilter.empty(size_bits=size_bits, probes=probes)
    added = _hashes(size_bits + probes, count)
    for part in np.array_split(added, 7):
        bloom.add(part)
    assert bloom.may_contain(added).all()
    assert bloom.may_contain(added[::-1]).all()  # in any order


def test_small_hashes_and_the_extremes_are_kept():
    """Hashes whose halves are 0 or all ones (the probes' stride made odd)."""
    edge = np.array([0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)
    bloom = EvalFilter.empty(size_bits=1 << 12, probes=8)
    bloom.add(edge)
    assert bloom.may_contain(edge).all()


def test_false_positives_match_the_reported_rate():
    count = 1 << 14
    size = eval_filter.filter_size(ngrams=count)
    bloom = EvalFilter.empty(**size)
    bloom.add(_hashes(1, count))
    others = _hashes(2, 1 << 20)
    observed = bloom.may_contain(others).mean()
    expected = bloom.false_positive_rate()
    assert expected < 0.003  # 16-32 bits and 8 probes an n-gram
    assert expected / 2 <= observed <= expected * 2 + 1e-5
    assert bloom.stats() == {"filter_bytes": size["size_bits"] // 8, "filter_probes": 8,
                             "filter_false_positive_rate": float(f"{expected:.3g}")}


def test_an_empty_filter_rejects_everything():
    bloom = EvalFilter.empty(**eval_filter.filter_size(ngrams=0))
    assert not bloom.may_contain(_hashes(3, 1000)).any()
    assert bloom.false_positive_rate() == 0.0


def test_the_size_is_capped_whatever_the_evaluation_set():
    assert eval_filter.filter_bits(ngrams=1 << 40) == eval_filter.MAX_BITS
    assert eval_filter.MAX_BITS // 8 <= 32 << 20
    for ngrams in (0, 1, 1000, 1 << 20, 3 << 24, 1 << 34, 1 << 50):
        size = eval_filter.filter_size(ngrams=ngrams)
        bits = size["size_bits"]
        assert eval_filter.MIN_BITS <= bits <= eval_filter.MAX_BITS
        assert bits & (bits - 1) == 0
        assert 1 <= size["probes"] <= eval_filter.MAX_PROBES
        if eval_filter.MIN_BITS < bits < eval_filter.MAX_BITS:  # ~16-32 bits an n-gram
            assert 16 * ngrams <= bits < 32 * ngrams


def test_bits_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        EvalFilter.empty(size_bits=1000, probes=3)


def test_the_filter_file_round_trips(tmp_path):
    bloom = EvalFilter.empty(size_bits=1 << 13, probes=4)
    bloom.add(_hashes(4, 500))
    assert eval_filter.write_filter(bloom, directory=str(tmp_path)) is bloom
    back = eval_filter.read_filter(str(tmp_path))
    assert back.probes == 4 and back.size_bits == 1 << 13
    assert back.bits.tobytes() == bloom.bits.tobytes()
    assert back.may_contain(_hashes(4, 500)).all()


def test_a_truncated_file_names_itself(tmp_path):
    bloom = EvalFilter.empty(size_bits=1 << 13, probes=4)
    path = tmp_path / eval_filter.FILTER_NAME
    path.write_bytes(bloom.to_bytes()[:-1])
    with pytest.raises(ValueError, match=eval_filter.FILTER_NAME):
        eval_filter.read_filter(str(tmp_path))


def test_the_combined_filter_does_not_depend_on_how_pieces_are_split():
    pieces = [(i % 3, _hashes(10 + i, 700)) for i in range(12)]
    fn = FilterFn(size_bits=1 << 14, probes=6)
    whole = fn.extract_output(fn.add_input(fn.create_accumulator(),
                                           (0, np.concatenate([h for _, h in pieces]))))
    for splits in (1, 4, 12):
        accumulators = []
        for part in np.array_split(np.arange(len(pieces)), splits):
            acc = fn.create_accumulator()
            for i in part:
                acc = fn.add_input(acc, pieces[i])
            accumulators.append(acc)
        got = fn.extract_output(fn.merge_accumulators(accumulators))
        assert got.bits.tobytes() == whole.bits.tobytes()


def test_build_filter_writes_the_filter_of_every_piece(tmp_path):
    pieces = [(shard, (0, _hashes(20 + shard, 300))) for shard in range(5)]
    with beam.Pipeline() as p:
        built = (p | beam.Create(pieces)
                 | eval_filter.BuildFilter(size_bits=1 << 14, probes=5, directory=str(tmp_path)))
        assert_that(built | beam.Map(lambda f: bool(f.may_contain(
            np.concatenate([h for _, (_, h) in pieces])).all())), equal_to([True]))
    written = eval_filter.read_filter(str(tmp_path))
    assert written.may_contain(np.concatenate([h for _, (_, h) in pieces])).all()
    assert written.set_bits() > 0
