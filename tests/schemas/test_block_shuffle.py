"""block_shuffle.py: the worked example, a bijection, blocks inside parts, and a shuffle that
is not degenerate (neighbours from different parts, positions spread over the split)."""

import numpy as np
import pytest

from schemas.block_shuffle import BlockShuffle, BlockShuffleSpec

SMALL = BlockShuffleSpec(block_records=2, window_blocks=2)


def _starts(sizes):
    return np.concatenate([[0], np.cumsum(sizes)])


def test_worked_example():
    shuffle = BlockShuffle(starts=[0, 3, 5], seed=1, spec=SMALL)
    assert shuffle.blocks == 3 and shuffle.window_starts.tolist() == [0, 4, 5]
    part, first, size = shuffle.window_blocks_of(0)
    assert list(zip(part.tolist(), first.tolist(), size.tolist())) == [(0, 0, 2), (1, 0, 2)]
    assert shuffle.within_window(0, np.arange(4)).tolist() == [0, 3, 2, 1]
    assert shuffle.forward(np.arange(5)).tolist() == [0, 4, 3, 1, 2]
    assert shuffle.inverse([0, 4, 3, 1, 2]).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("spec", [SMALL, BlockShuffleSpec(block_records=5, window_blocks=3),
                                  BlockShuffleSpec(block_records=1000, window_blocks=16)])
@pytest.mark.parametrize("seed", [0, 7])
def test_a_bijection_whose_inverse_undoes_it(spec, seed):
    sizes = [5, 0, 7, 4, 1, 0, 23, 9]
    shuffle = BlockShuffle(starts=_starts(sizes), seed=seed, spec=spec)
    records = shuffle.forward(np.arange(49))
    assert sorted(records.tolist()) == list(range(49))
    assert shuffle.inverse(records).tolist() == list(range(49))
    # One number a window, the windows' sizes summing to the records.
    assert shuffle.window_starts[-1] == 49 and shuffle.windows == -(-shuffle.blocks
                                                                   // spec.window_blocks)


def test_blocks_stay_inside_parts_and_a_window_reads_only_its_blocks():
    sizes = [5, 0, 7, 4, 1, 0, 23, 9]
    starts = _starts(sizes)
    shuffle = BlockShuffle(starts=starts, seed=3, spec=BlockShuffleSpec(block_records=3,
                                                                        window_blocks=2))
    assert shuffle.blocks == sum(-(-n // 3) for n in sizes)
    for window in range(shuffle.windows):
        part, first, size = shuffle.window_blocks_of(window)
        assert ((size >= 1) & (size <= 3) & (first + size <= np.diff(starts)[part])).all()
        block_records = {int(starts[p]) + f + i for p, f, n in zip(part, first, size)
                         for i in range(n)}
        lo, hi = shuffle.window_starts[window], shuffle.window_starts[window + 1]
        assert set(shuffle.forward(np.arange(lo, hi)).tolist()) == block_records


def test_deterministic_for_a_seed_and_different_across_seeds():
    starts = _starts([40, 13, 60])
    a, b, c = (BlockShuffle(starts=starts, seed=seed, spec=SMALL).forward(np.arange(113))
               for seed in (5, 5, 6))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


def test_empty_split():
    shuffle = BlockShuffle(starts=[0, 0], seed=0, spec=SMALL)
    assert shuffle.blocks == 0 and shuffle.windows == 0
    assert shuffle.forward(np.arange(0)).tolist() == []


def test_not_degenerate_neighbours_from_other_parts_and_positions_spread():
    # 200 parts of 500 records, blocks of 16, windows of 16 blocks (4,000 ranged reads).
    parts, per_part = 200, 500
    spec = BlockShuffleSpec(block_records=16, window_blocks=16)
    shuffle = BlockShuffle(starts=_starts([per_part] * parts), seed=11, spec=spec)
    n = parts * per_part
    records = shuffle.forward(np.arange(n))
    part = records // per_part
    # Neighbours share a part only when they share a block (~1/window_blocks) or, rarely, two
    # blocks of one part meet in a window; the input's order: always.
    assert np.mean(part[1:] == part[:-1]) < 1.5 / spec.window_blocks
    # A record's position does not follow its input position.
    assert abs(np.corrcoef(records, np.arange(n))[0, 1]) < 0.02
    # Each part's records are spread over the whole split: in 10 equal slices of the output,
    # every part of the first 20 has records in at least 8.
    slices = np.arange(n) * 10 // n
    for p in range(20):
        assert len(np.unique(slices[part == p])) >= 8
    # The windows (a reader's memory) hold records of window_blocks different parts mostly.
    first = shuffle.window_blocks_of(0)[0]
    assert len(set(first.tolist())) >= spec.window_blocks - 2


def test_sizes_must_be_positive():
    with pytest.raises(ValueError, match="block_records must be >= 1, got 0"):
        BlockShuffleSpec(block_records=0)
