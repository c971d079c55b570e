import random

import pytest

from pipeline.quality import lsh
from pipeline.quality.records import Signed


def test_band_keys_name_the_band_and_agree_exactly_when_its_values_do():
    first = bytes(range(64))  # 16 values of 4 bytes
    second = first[:16] + b"\xff" + first[17:]  # the second band (of 4) differs
    a, b = lsh.band_keys(first, bands=4), lsh.band_keys(second, bands=4)
    assert [k[:2] for k in a] == [i.to_bytes(2, "big") for i in range(4)]
    assert len(a[0]) == 2 + lsh.KEY_DIGEST_BYTES
    assert [x == y for x, y in zip(a, b)] == [True, False, True, True]
    assert (
        lsh.band_keys(first[:16] * 4, bands=4)[0][2:]
        == lsh.band_keys(first[:16] * 4, bands=4)[1][2:]
    )  # equal values in different bands: same digest...
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


def test_a_band_group_links_each_member_to_its_next_neighbours():
    members = [(2, 5), (0, 9), (2, 1), (0, 9), (3, 0)]
    assert lsh.neighbour_edges(members, neighbours=2) == [
        ((0, 9), (2, 1)),
        ((0, 9), (2, 5)),
        ((2, 1), (2, 5)),
        ((2, 1), (3, 0)),
        ((2, 5), (3, 0)),
    ]
    assert lsh.neighbour_edges(members) == [((0, 9), (2, 1)), ((2, 1), (2, 5)), ((2, 5), (3, 0))]
    assert lsh.neighbour_edges([(1, 1)]) == []


def _signatures(seed: int, count: int = 400) -> list[Signed]:
    """Signed documents with families sharing some of 16 bands."""
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        values = [rng.getrandbits(32) for _ in range(64)]
        if i and rng.random() < 0.5:  # a relative of an earlier document: some bands shared
            base = docs[rng.randrange(len(docs))].signature
            values = [
                int.from_bytes(base[4 * j : 4 * j + 4], "little") if rng.random() < 0.6 else v
                for j, v in enumerate(values)
            ]
        docs.append(
            Signed(
                file=rng.randrange(4),
                line=i + 1,
                subset="A",
                tokens=0,
                signature=b"".join(v.to_bytes(4, "little") for v in values),
            )
        )
    return docs


def _reference_edges(docs, bands):
    groups: dict = {}
    for doc in docs:
        for key in lsh.band_keys(doc.signature, bands=bands):
            groups.setdefault(key, []).append(tuple(doc.position))
    return {edge for members in groups.values() for edge in lsh.neighbour_edges(members)}


@pytest.mark.parametrize("shards,batches", [(1, 1), (7, 3), (256, 10)])
def test_sorted_neighbour_edges_are_the_per_key_links_whatever_the_shards_and_batches(
    shards, batches
):
    docs = _signatures(seed=shards)
    expected = _reference_edges(docs, bands=16)
    assert len(expected) > 100
    columns = lsh.band_columns(docs[:3], bands=16)
    assert [
        (int(b), int(d).to_bytes(8, "big")) for b, d in zip(columns["band"], columns["digest"])
    ] == [
        (int.from_bytes(k[:2], "big"), k[2:])
        for doc in docs[:3]
        for k in lsh.band_keys(doc.signature, bands=16)
    ]
    random.Random(batches).shuffle(docs)
    parts: dict = {}
    for b in range(batches):  # batches as bundles would cut them, each sharded apart
        columns = lsh.band_columns(docs[b::batches], bands=16)
        for shard, part in lsh.shard_columns(columns, shards=shards):
            parts.setdefault(shard, []).append(part)
    found = [lsh.sorted_neighbour_edges(p) for p in parts.values()]
    assert set().union(*found) == expected
    assert len(parts) == shards
    assert lsh.sorted_neighbour_edges([]) == set()
