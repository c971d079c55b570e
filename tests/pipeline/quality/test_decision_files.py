"""decision_files.py: decision files written sorted, a line's reason looked up in any order."""

import pytest

from common.errors import DataError
from pipeline.quality import decision_files
from pipeline.quality.decision_files import CONTAMINATED, DUPLICATE, Decisions


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


def test_totals_round_trip(tmp_path):
    totals = {"subsets": {"A": {"documents": 2, "tokens": 9}}, "excluded_hashes": 1}
    decision_files.write_totals(totals, directory=str(tmp_path))
    assert decision_files.read_totals(str(tmp_path)) == totals
    decision_files.clear(str(tmp_path))
    with pytest.raises(DataError, match="without its totals"):
        decision_files.read_totals(str(tmp_path))
