"""subset_stats.py: per-subset totals added, merged without aliasing, summed."""

import json

from pipeline.tokenize.subset_stats import SubsetStats, merge_into, summed


def test_add_sums_every_field():
    stats = SubsetStats(documents=1, bytes=10, tokens=5, lossy_documents=0)
    stats.add(SubsetStats(documents=2, bytes=3, tokens=4, lossy_documents=1))
    assert stats == SubsetStats(documents=3, bytes=13, tokens=9, lossy_documents=1)


def test_merge_into_adds_known_subsets_and_creates_new_ones():
    total = {"A": SubsetStats(1, 10, 5, 0)}
    merge_into(total, {"A": SubsetStats(2, 20, 7, 1), "B": SubsetStats(1, 4, 2, 0)})
    assert total == {"A": SubsetStats(3, 30, 12, 1), "B": SubsetStats(1, 4, 2, 0)}


def test_merge_into_does_not_alias_the_part():
    part = {"A": SubsetStats(1, 2, 3, 0)}
    total: dict[str, SubsetStats] = {}
    merge_into(total, part)
    assert total["A"] is not part["A"]
    merge_into(total, part)  # merging the same part twice must not double it in place
    assert total == {"A": SubsetStats(2, 4, 6, 0)}
    assert part == {"A": SubsetStats(1, 2, 3, 0)}


def test_summed():
    assert summed([]) == SubsetStats()
    parts = [SubsetStats(1, 2, 3, 0), SubsetStats(4, 5, 6, 1), SubsetStats(0, 0, 0, 1)]
    assert summed(parts) == SubsetStats(documents=5, bytes=7, tokens=9, lossy_documents=2)
    assert parts[0] == SubsetStats(1, 2, 3, 0)  # inputs unchanged


def test_to_json_has_the_manifest_keys_and_is_plain_json():
    doc = SubsetStats(1, 2, 3, 4).to_json()
    assert doc == {"documents": 1, "bytes": 2, "tokens": 3, "lossy_documents": 4}
    assert json.loads(json.dumps(doc)) == doc
