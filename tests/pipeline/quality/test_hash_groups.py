"""The copies of one hash decided as a stream: the lowest (file, line) kept, the rest dropped,
over values that can be walked only once and have no length; and the Beam stage on copies
spread over files in shuffled order, with and without an exclusion marker."""

import random

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.quality import hash_groups
from pipeline.quality.decision_files import CONTAMINATED, DUPLICATE
from pipeline.quality.hash_groups import DOC, DecideByHash, Kept, decide_copies
from pipeline.quality.records import Document, Signed


class OnePass:
    """An iterable without ``len`` that refuses a second walk (as a lazily read group)."""

    def __init__(self, items):
        self._items = items
        self._walked = False

    def __iter__(self):
        assert not self._walked, "a group's values were walked twice"
        self._walked = True
        yield from self._items


def copies(n: int, *, seed: int = 0) -> list[tuple]:
    rows = [tuple(Document(i % 7, 1000 - i, "A", 4)) for i in range(n)]
    random.Random(seed).shuffle(rows)
    return rows


def test_many_copies_walked_once_keep_the_lowest_position():
    rows = copies(5000)
    out = list(decide_copies(OnePass((DOC, r) for r in rows), excluded=False, dedup=True,
                             near=False))
    lowest = min(rows)
    assert out[-1] == Kept(lowest) and isinstance(out[-1], Kept)
    drops = out[:-1]
    assert sorted(drops) == sorted((f, (line, DUPLICATE)) for f, line, _, _ in rows
                                   if (f, line) != lowest[:2])


def test_drops_leave_while_the_group_is_still_being_read():
    # A list of the group (however it is built) reads every value before the first drop.
    rows = copies(1000, seed=2)
    read = []
    values = ((read.append(r), (DOC, r))[1] for r in rows)
    first = next(decide_copies(OnePass(values), excluded=False, dedup=True, near=False))
    assert first[1][1] == DUPLICATE and len(read) < len(rows)


def test_a_signed_keeper_keeps_its_signature_and_no_other_copy_is_held():
    rows = [tuple(Signed(3, 1, "A", 2, b"x")), tuple(Signed(0, 9, "B", 5, b"y"))]
    out = list(decide_copies(OnePass((DOC, r) for r in rows), excluded=False, dedup=True,
                             near=True))
    assert out == [(3, (1, DUPLICATE)), Kept(rows[1])]


def test_excluded_drops_every_copy_and_without_dedup_every_copy_is_kept():
    rows = copies(10)
    out = list(decide_copies(OnePass((DOC, r) for r in rows), excluded=True, dedup=True,
                             near=False))
    assert sorted(out) == sorted((f, (line, CONTAMINATED)) for f, line, _, _ in rows)
    kept = list(decide_copies(OnePass((DOC, r) for r in rows), excluded=False, dedup=False,
                              near=False))
    assert kept == [Kept(r) for r in rows]


def test_stage_keeps_the_lowest_copy_across_files_and_counts_exclusions():
    many = copies(3000, seed=1)
    other = [tuple(Document(5, 3, "B", 1)), tuple(Document(2, 8, "B", 1))]
    with TestPipeline() as p:
        docs = p | "Docs" >> beam.Create([(b"many", r) for r in many]
                                         + [(b"other", r) for r in other])
        excluded = p | "Excluded" >> beam.Create([(b"other", hash_groups.EXCLUDED)])
        out = (docs, excluded) | DecideByHash(dedup=True, near=False, exclusions=True)
        lowest = min(many)
        assert_that(out.drops, equal_to(
            [(f, (line, DUPLICATE)) for f, line, _, _ in many if (f, line) != lowest[:2]]
            + [(5, (3, CONTAMINATED)), (2, (8, CONTAMINATED))]), label="Drops")
        assert_that(out[hash_groups.KEPT], equal_to([("A", (1, 4))]), label="Kept")
        assert_that(out[hash_groups.EXCLUDED], equal_to([1]), label="Excluded")


def test_a_bundles_table_holds_each_hashs_lowest_copy_and_builds_only_its_rows():
    made = []

    def row(position):
        return lambda: made.append(position) or ("row", position)

    table = hash_groups.LowestCopies(limit=3)
    offers = [(b"a", (1, 5)), (b"a", (1, 7)), (b"b", (2, 1)), (b"a", (0, 9)), (b"a", (0, 9 + 1))]
    drops = [table.offer(key, position, row(position)) for key, position in offers]
    assert drops == [None, (1, (7, DUPLICATE)), None, (1, (5, DUPLICATE)), (0, (10, DUPLICATE))]
    assert made == [(1, 5), (2, 1), (0, 9)]  # a copy beaten on arrival builds no row
    assert not table.full
    assert table.offer(b"c", (3, 3), row((3, 3))) is None and table.full
    assert sorted(table.flush()) == [(b"a", ("row", (0, 9))), (b"b", ("row", (2, 1))),
                                     (b"c", ("row", (3, 3)))]
    assert table.flush() == [] and not table.full
    # After a flush a hash starts afresh: the grouping by hash decides between the two held.
    assert table.offer(b"a", (5, 0), row((5, 0))) is None


def test_tables_over_any_split_of_the_copies_leave_the_same_lowest_to_the_grouping():
    rows = copies(2000, seed=3)
    lowest = min(rows)
    for parts in (1, 3, 17):
        table, held, drops = hash_groups.LowestCopies(limit=1), [], []
        for i, r in enumerate(rows):
            if i % (len(rows) // parts + 1) == 0:
                held += table.flush()  # a bundle ends
            drop = table.offer(b"k", r[:2], lambda r=r: r)
            drops += [drop] if drop else []
        held += table.flush()
        decided = list(decide_copies(OnePass((DOC, r) for _, r in held), excluded=False,
                                     dedup=True, near=False))
        assert decided[-1] == Kept(lowest) and len(held) <= parts
        assert sorted(drops + decided[:-1]) == sorted(
            (f, (line, DUPLICATE)) for f, line, _, _ in rows if (f, line) != lowest[:2])
