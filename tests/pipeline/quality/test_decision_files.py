"""decision_files.py: decision files written sorted, a line's reason looked up in any order,
a redacted line's spans read back exactly."""

import numpy as np
import pytest

from common.errors import DataError
from pipeline.quality import decision_files
from pipeline.quality.decision_files import (
    CONTAMINATED,
    DECONTAMINATED,
    DUPLICATE,
    REDACTED,
    Decisions,
    redaction,
)


def test_decisions_round_trip_and_walk(tmp_path):
    decision_files.write_decisions([(9, DUPLICATE), (2, CONTAMINATED), (5, DUPLICATE)],
                                  directory=str(tmp_path), file_index=3)
    path = tmp_path / "00003.drops"
    assert path.stat().st_size == 8 + 9 * 3
    decisions = Decisions.load(str(tmp_path), 3)
    assert len(decisions) == 3
    assert [decisions.reason(line) for line in range(1, 11)] == [
        None, CONTAMINATED, None, None, DUPLICATE, None, None, None, DUPLICATE, None]


def test_empty_missing_and_damaged_decision_files(tmp_path):
    decision_files.write_decisions([], directory=str(tmp_path), file_index=0)
    assert len(Decisions.load(str(tmp_path), 0)) == 0
    with pytest.raises(DataError, match="wrote no decision file for input file 1"):
        Decisions.load(str(tmp_path), 1)
    (tmp_path / "00002.drops").write_bytes(b"\x05" + bytes(7))
    with pytest.raises(DataError, match="is not a decision file"):
        Decisions.load(str(tmp_path), 2)
    with pytest.raises(ValueError, match="line 4 decided twice"):
        decision_files.write_decisions([(4, DUPLICATE), (4, CONTAMINATED)],
                                      directory=str(tmp_path), file_index=5)


def test_redacted_spans_round_trip(tmp_path):
    # Line 4: two spans; line 7: one past 2^32 (a long document); line 9: redacted and a
    # duplicate, so it drops and its spans go; line 12: redacted, no other decision.
    rows = [redaction(12, np.array([[0, 5]])), (2, DUPLICATE), (9, DUPLICATE),
            redaction(7, np.array([[3, 8], [1 << 33, (1 << 33) + 40]])),
            redaction(9, np.array([[1, 2]])), (5, DECONTAMINATED),
            redaction(4, np.array([[10, 25], [40, 41]]))]
    decision_files.write_decisions(rows, directory=str(tmp_path), file_index=1)
    # 6 lines, 3 of them redacted, 5 spans: 8 + 9 * 6 + 8 * 3 + 16 * 5 bytes.
    assert (tmp_path / "00001.drops").stat().st_size == 8 + 54 + 24 + 80
    decisions = Decisions.load(str(tmp_path), 1)
    assert [decisions.reason(line) for line in (2, 4, 5, 7, 9, 12, 13)] == [
        DUPLICATE, REDACTED, DECONTAMINATED, REDACTED, DUPLICATE, REDACTED, None]
    assert decisions.spans(4).tolist() == [[10, 25], [40, 41]]
    assert decisions.spans(7).tolist() == [[3, 8], [1 << 33, (1 << 33) + 40]]
    assert decisions.spans(12).tolist() == [[0, 5]]
    assert decisions.spans(4).dtype == np.int64
    for line in (2, 9, 13):  # not redacted: no spans to give
        with pytest.raises(KeyError, match=f"line {line} is not redacted"):
            decisions.spans(line)


def test_damaged_span_sections_are_refused(tmp_path):
    decision_files.write_decisions([redaction(3, np.array([[1, 4], [6, 9]]))],
                                  directory=str(tmp_path), file_index=0)
    whole = (tmp_path / "00000.drops").read_bytes()
    assert len(whole) == 8 + 9 + 8 + 32
    for damaged in (whole[:-16], whole[:-1], whole[:17], whole + bytes(16)):
        (tmp_path / "00000.drops").write_bytes(damaged)
        with pytest.raises(DataError, match="is not a decision file"):
            Decisions.load(str(tmp_path), 0)


def test_totals_round_trip(tmp_path):
    totals = {"subsets": {"A": {"documents": 2, "tokens": 9}}, "excluded_hashes": 1}
    decision_files.write_totals(totals, directory=str(tmp_path))
    assert decision_files.read_totals(str(tmp_path)) == totals
    decision_files.clear(str(tmp_path))
    with pytest.raises(DataError, match="without its totals"):
        decision_files.read_totals(str(tmp_path))
