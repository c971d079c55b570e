"""records.py: named pre-pass records that order as tuples, refuse a row of the wrong shape, and
travel as plain tuples (what Beam's default coder writes natively)."""

import pytest
from apache_beam import coders

from pipeline.quality import hash_groups
from pipeline.quality.decision_files import DUPLICATE
from pipeline.quality.records import Candidate, Document, Position, Signed


def test_documents_order_by_position_first():
    low, high = Document(0, 9, "B", 5), Document(1, 1, "A", 0)
    assert low < high and low.position == Position(0, 9) < high.position
    assert sorted([high, low]) == [low, high]


def test_a_row_of_another_record_fails_loudly():
    signed = Signed(file=0, line=1, subset="A", tokens=3, signature=b"s")
    assert signed.document == Document(0, 1, "A", 3)
    with pytest.raises(TypeError):
        Document._make(tuple(signed))
    with pytest.raises(TypeError):
        Signed._make(tuple(signed.document))


def test_rows_are_plain_tuples_for_the_coder():
    coder = coders.FastPrimitivesCoder()
    row = tuple(Candidate(lower=tuple(Document(0, 1, "A", 3)),
                          upper=tuple(Document(0, 2, "A", 4)), similarity=0.9))
    assert type(row) is tuple and coder.decode(coder.encode(row)) == row
    assert Candidate._make(row).similarity == 0.9


def test_decide_keeps_the_lowest_position_and_refuses_a_signed_row_without_near():
    rows = [tuple(Document(2, 1, "A", 0)), tuple(Document(0, 7, "A", 0)),
            tuple(Document(1, 3, "A", 0))]
    out = list(hash_groups.decide_copies([(hash_groups.DOC, r) for r in rows], excluded=False,
                                         dedup=True, near=False))
    assert [row for row in out if not isinstance(row, hash_groups.Kept)] == [
        (2, (1, DUPLICATE)), (1, (3, DUPLICATE))]
    signed = [tuple(Signed(0, 1, "A", 0, b"s"))]
    with pytest.raises(TypeError):
        list(hash_groups.decide_copies([(hash_groups.DOC, r) for r in signed], excluded=False,
                                       dedup=True, near=False))
