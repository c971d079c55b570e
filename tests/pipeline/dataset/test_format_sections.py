"""The manifest's sections of the extra formats, from the table of formats, and the check that
Megatron pairs hold every document copy once."""

import types

import pytest

from common.errors import DataError
from pipeline.dataset.format_sections import files_problem, format_sections


def _pairs(*documents: int) -> dict:
    return {"megatron": [types.SimpleNamespace(documents=n) for n in documents]}


def test_pairs_must_hold_every_copy_once_when_megatron_was_asked_for():
    both = ("tfrecord", "megatron")
    assert files_problem(_pairs(3, 4), copies=7, formats=both) is None
    assert files_problem({}, copies=0, formats=both) is None  # nothing written, no pair
    assert files_problem({}, copies=7, formats=("tfrecord",)) is None  # no pair asked for
    assert files_problem(_pairs(3), copies=7, formats=both) == (
        "the part files hold 7 documents, but the 1 Megatron pairs reported 3: a pair was lost "
        "or reported twice")
    # Every pair lost: not an empty list of files in the manifest.
    assert files_problem({}, copies=7, formats=both) == (
        "the part files hold 7 documents, but the 0 Megatron pairs reported 0: a pair was lost "
        "or reported twice")


def test_only_the_formats_asked_for_have_a_section():
    shards = [types.SimpleNamespace(path="t-00000-of-00001.tfrecord")]
    assert format_sections({}, formats=("tfrecord",), shards=shards, vocab_size=300) == {}
    sections = format_sections({}, formats=("arrayrecord", "tfrecord", "megatron"), shards=[],
                               vocab_size=300)
    assert list(sections) == ["megatron", "arrayrecord"]  # the table's order
    assert sections["megatron"] == {"dtype": "uint16", "eod": "eos", "documents": 0,
                                    "tokens": 0, "files": []}
    with pytest.raises(DataError, match="1 shards but 0 ArrayRecord files reported"):
        format_sections({}, formats=("tfrecord", "arrayrecord"), shards=shards, vocab_size=300)
