"""shard_plan.py: the module docstring's worked example, and the plan's invariants."""

import random

import pytest

from pipeline.write.shard_plan import PartInfo, Piece, plan_shards, records_per_shard, shard_name


def _part(file_index, chunk_index, records, padded=()):
    return PartInfo(file_index, chunk_index, f"p{file_index}-{chunk_index}", records,
                    records * 10, padded)


def test_worked_example():
    parts = [_part(0, 0, 3), _part(0, 1, 0), _part(1, 0, 4, padded=((3, 2),))]
    plans = plan_shards(parts, split="s", per_shard=3, seq_len=5, frame_bytes=10)
    assert [p.pieces for p in plans] == [(Piece("p0-0", 0, 3),), (Piece("p1-0", 0, 3),),
                                         (Piece("p1-0", 3, 1),)]
    assert [p.name for p in plans] == ["s-00000-of-00003.tfrecord", "s-00001-of-00003.tfrecord",
                                       "s-00002-of-00003.tfrecord"]
    assert [(p.records, p.tokens, p.padding_tokens) for p in plans] == [(3, 15, 0), (3, 15, 0),
                                                                        (1, 3, 2)]


def test_plan_is_a_pure_function_of_the_parts_not_their_order():
    parts = [_part(f, c, (f * 7 + c * 3) % 5) for f in range(4) for c in range(5)]
    expected = plan_shards(parts, split="s", per_shard=4, seq_len=8, frame_bytes=10)
    for seed in range(5):
        shuffled = parts[:]
        random.Random(seed).shuffle(shuffled)
        assert plan_shards(shuffled, split="s", per_shard=4, seq_len=8, frame_bytes=10) == expected
    assert all(p.records == 4 for p in expected[:-1]) and 0 < expected[-1].records <= 4
    assert sum(p.records for p in expected) == sum(p.records for p in parts)


def test_no_records_no_shards():
    assert plan_shards([_part(0, 0, 0)], split="s", per_shard=2, seq_len=4, frame_bytes=10) == []


def test_duplicate_or_inconsistent_parts_are_refused():
    with pytest.raises(ValueError, match="two parts"):
        plan_shards([_part(0, 0, 1), _part(0, 0, 1)], split="s", per_shard=2, seq_len=4,
                    frame_bytes=10)
    with pytest.raises(ValueError, match="expected 3 records of 10 bytes"):
        plan_shards([PartInfo(0, 0, "p", 3, 31)], split="s", per_shard=2, seq_len=4,
                    frame_bytes=10)


def test_records_per_shard_and_names():
    assert records_per_shard(shard_bytes=1000, frame_bytes=300) == 3
    assert records_per_shard(shard_bytes=100, frame_bytes=300) == 1
    assert shard_name(split="val", index=2, count=10) == "val-00002-of-00010.tfrecord"
