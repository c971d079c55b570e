"""order.py: the module docstring's worked example, and each order's plans; without I/O."""

import numpy as np
import pytest

from pipeline.write.order import InputOrder, ShuffledOrder, plan_ordered_shards
from pipeline.write.shard_plan import PartInfo, plan_shards
from schemas.block_shuffle import BlockShuffle, BlockShuffleSpec


def _part(file_index, records, padded=(), epoch=0):
    return PartInfo(file_index, 0, f"e{epoch}-p{file_index}", records, records * 10, padded,
                    epoch=epoch)


def _windows(order, plan, window_records):
    return [w.ranges for w in order.windows(plan.pieces, window_records=window_records)]


def _records(order, plans, window_records):
    """(part, record) of every position, in position order, through the windows' picks."""
    out = []
    for plan in plans:
        for window in order.windows(plan.pieces, window_records=window_records):
            read = [(path, first + i) for path, first, count in window.ranges
                    for i in range(count)]
            out += [read[i] for i in window.picks.tolist()]
    return out


SMALL = BlockShuffleSpec(block_records=2, window_blocks=2)


def test_worked_example():
    parts = [_part(0, 3), _part(1, 2)]
    a, b = "e0-p0", "e0-p1"
    order, (plan,) = plan_ordered_shards(parts, split="s", per_shard=5, seq_len=4,
                                         frame_bytes=10)
    assert order == InputOrder()
    assert _windows(order, plan, 2) == [[(a, 0, 2)], [(a, 2, 1)], [(b, 0, 2)]]
    order, (plan,) = plan_ordered_shards(parts, split="s", per_shard=5, seq_len=4,
                                         frame_bytes=10, seed=1, shuffle=SMALL)
    windows = list(order.windows(plan.pieces, window_records=2))
    assert [w.ranges for w in windows] == [[(a, 0, 2), (b, 0, 2)], [(a, 2, 1)]]
    assert [w.picks.tolist() for w in windows] == [[0, 3, 2, 1], [0]]
    assert _records(order, [plan], 2) == [(a, 0), (b, 1), (b, 0), (a, 1), (a, 2)]


@pytest.mark.parametrize("window_records", [1, 3, 1000])
def test_shuffled_windows_hold_every_record_once_in_the_shuffles_order(window_records):
    # Parts of 5, 0, 7 and 4 records (epochs 0 and 1), given out of order; shards of 5.
    parts = [_part(0, 4, epoch=1), _part(2, 7), _part(0, 5), _part(1, 0)]
    order, plans = plan_ordered_shards(parts, split="s", per_shard=5, seq_len=4,
                                       frame_bytes=10, seed=3, shuffle=SMALL)
    assert order.paths == ("e0-p0", "e0-p1", "e0-p2", "e1-p0")
    assert order.shuffle.starts.tolist() == [0, 5, 5, 12, 16]
    windows = [w for plan in plans for w in order.windows(plan.pieces,
                                                          window_records=window_records)]
    # Every read is a whole block of one part, at most 2 records, read once per shard.
    assert all(count <= 2 for w in windows for _, _, count in w.ranges)
    numbered = [(path, i) for path, n in (("e0-p0", 5), ("e0-p2", 7), ("e1-p0", 4))
                for i in range(n)]  # the input's order
    expected = BlockShuffle(starts=[0, 5, 5, 12, 16], seed=3, spec=SMALL).forward(np.arange(16))
    assert _records(order, plans, window_records) == [numbered[r] for r in expected]


def test_padding_moves_with_its_records():
    # Record 6 of the split (part 1's record 1) holds 3 padding tokens, record 15 holds 2.
    parts = [_part(0, 5), _part(1, 7, padded=((1, 3),)), _part(2, 4, padded=((3, 2),))]
    plain = plan_shards(parts, split="s", per_shard=5, seq_len=4, frame_bytes=10)
    assert [p.padding_tokens for p in plain] == [0, 3, 0, 2]
    for seed in range(4):
        order, plans = plan_ordered_shards(parts, split="s", per_shard=5, seq_len=4,
                                           frame_bytes=10, seed=seed, shuffle=SMALL)
        shard_of = order.shuffle.inverse([6, 15]) // 5
        expected = [0] * 4
        expected[shard_of[0]] += 3
        expected[shard_of[1]] += 2
        assert [p.padding_tokens for p in plans] == expected
        assert [(p.name, p.records, p.pieces) for p in plans] == [
            (p.name, p.records, p.pieces) for p in plain]  # names and sizes as in input order
        assert [p.tokens + p.padding_tokens for p in plans] == [20, 20, 20, 4]


def test_shuffled_order_is_one_small_object_per_split():
    order = ShuffledOrder.of([_part(0, 2), _part(1, 3)], seed=0, spec=SMALL)
    assert order.records == 5 and order.shuffle.blocks == 3
    assert order.shuffle.window_starts.tolist() in ([0, 3, 5], [0, 4, 5])  # 1 number a window
