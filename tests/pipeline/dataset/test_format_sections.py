"""The manifest's sections of the extra formats, and the check that Megatron pairs hold every
document copy once."""

import types

from pipeline.dataset.format_sections import pairs_problem


def _pairs(*documents: int) -> list:
    return [types.SimpleNamespace(documents=n) for n in documents]


def test_pairs_must_hold_every_copy_once_when_megatron_was_asked_for():
    both = ("tfrecord", "megatron")
    assert pairs_problem(_pairs(3, 4), copies=7, formats=both) is None
    assert pairs_problem([], copies=0, formats=both) is None  # nothing written, no pair
    assert pairs_problem([], copies=7, formats=("tfrecord",)) is None  # no pair asked for
    assert pairs_problem(_pairs(3), copies=7, formats=both) == (
        "the part files hold 7 documents, but the 1 Megatron pairs reported 3: a pair was lost "
        "or reported twice")
    # Every pair lost: not an empty list of files in the manifest.
    assert pairs_problem([], copies=7, formats=both) == (
        "the part files hold 7 documents, but the 0 Megatron pairs reported 0: a pair was lost "
        "or reported twice")
