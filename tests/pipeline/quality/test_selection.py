"""selection.py: drops from the decision file, repeat counts, and ReadStats that still add up
(read = written + filtered + rejected), applied chunk by chunk to read_file's output for a
generated file."""

import collections

import numpy as np
import pytest

from common.errors import DataError
from datagen.pile_files import pile_doc, write_jsonl
from pipeline.config import ReadConfig
from pipeline.quality import decision_files, mixture
from pipeline.quality.selection import Selection
from pipeline.read.inputs import expand_inputs
from pipeline.read.stage import Chunk, ReadStats, read_file


def select(items, *, selection: Selection):
    """``read_file``'s items with the selection applied to each chunk, as Parse does, and the
    file's ReadStats corrected by the chunks' drops."""
    decisions, dropped = {}, ReadStats(file_index=-1, path="")
    for item in items:
        if isinstance(item, Chunk):
            kept = selection.apply_chunk(item, dropped, decisions=decisions)
            if kept is not None:
                yield kept
        else:
            if isinstance(item, ReadStats):
                item.merge(dropped)
            yield item


def _read(tmp_path, selection):
    docs = [pile_doc(f"document {n}", "A" if n % 2 else "B") for n in range(1, 13)]
    write_jsonl(tmp_path / "in.jsonl", docs[:5] + [b"{broken"] + docs[5:])  # line 6 rejected
    (file,) = expand_inputs(str(tmp_path / "in.jsonl"))
    items = list(select(read_file(file, config=ReadConfig(chunk_bytes=1024)),
                        selection=selection))
    chunks = [i for i in items if isinstance(i, Chunk)]
    (stats,) = [i for i in items if isinstance(i, ReadStats)]
    return file, chunks, stats


def test_drops_and_repeats(tmp_path):
    decision_files.write_decisions([(2, decision_files.DUPLICATE), (7, decision_files.CONTAMINATED),
                                   (13, decision_files.DUPLICATE)],
                                  directory=str(tmp_path), file_index=0)
    weights = {"A": 0.5, "B": 2.0}
    file, chunks, stats = _read(tmp_path, Selection(decisions=str(tmp_path), weights=weights,
                                                    seed=4))
    documents = [d for c in chunks for d in c.documents]
    repeats = [r for c in chunks for r in c.repeats]
    assert [d.line for d in documents] == [1, 3, 4, 5, 8, 9, 10, 11, 12]
    expected = [mixture.repeat_count(weights, subset=d.subset, seed=4, file_index=file.index,
                                     line=d.line) for d in documents]
    assert repeats == expected
    assert all(r == 2 for d, r in zip(documents, repeats) if d.subset == "B")
    zero = collections.Counter(d.subset for d, r in zip(documents, repeats) if r == 0)
    assert stats.filtered == {"duplicate": 2, "contaminated": 1, "mixture": zero["A"]}
    # Lines 2, 7 and 13 hold documents 2, 6 and 12: all of subset B.
    assert stats.filtered_by_subset == {("duplicate", "B"): 2, ("contaminated", "B"): 1,
                                        ("mixture", "A"): zero["A"]}
    assert stats.rejected == {"invalid_json": 1}
    assert stats.documents == 9 - zero["A"]
    assert stats.lines == 13 == stats.documents + sum(stats.filtered.values()) + 1


def test_no_weights_no_repeats(tmp_path):
    decision_files.write_decisions([(1, decision_files.DUPLICATE)], directory=str(tmp_path),
                                  file_index=0)
    _, chunks, stats = _read(tmp_path, Selection(decisions=str(tmp_path)))
    assert all(c.repeats == () for c in chunks)
    assert stats.documents == 11 and stats.filtered == {"duplicate": 1}


def test_redacted_documents_lose_their_spans(tmp_path):
    text = "The ferry left at dawn. Quoted exam text here, sir! The gulls followed it out."
    write_jsonl(tmp_path / "in.jsonl", [pile_doc("Nothing to cut in this one.", "A"),
                                        pile_doc(text, "B"),
                                        pile_doc("Café, naïve — über.", "A")])
    # Line 2: two spans (code points, not bytes); line 3: the cut of "naïve — " (one span).
    decision_files.write_decisions(
        [decision_files.redaction(2, np.array([[24, 35], [36, 51]])),
         decision_files.redaction(3, np.array([[6, 14]]))], directory=str(tmp_path), file_index=0)
    (file,) = expand_inputs(str(tmp_path / "in.jsonl"))
    items = list(select(read_file(file, config=ReadConfig()),
                        selection=Selection(decisions=str(tmp_path))))
    documents = [d for i in items if isinstance(i, Chunk) for d in i.documents]
    assert [d.text for d in documents] == ["Nothing to cut in this one.",
                                           "The ferry left at dawn.   The gulls followed it out.",
                                           "Café, über."]
    assert [d.text_bytes for d in documents] == [len(d.text.encode()) for d in documents]
    (stats,) = [i for i in items if isinstance(i, ReadStats)]
    assert stats.documents == 3 and not stats.filtered  # redacted documents are kept


def test_spans_past_a_documents_end_are_refused(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [pile_doc("Short text.", "A")])
    decision_files.write_decisions([decision_files.redaction(1, np.array([[6, 40]]))],
                                   directory=str(tmp_path), file_index=0)
    (file,) = expand_inputs(str(tmp_path / "in.jsonl"))
    with pytest.raises(DataError, match="line 1: the quality pre-pass cut characters up to 40"):
        list(select(read_file(file, config=ReadConfig()),
                    selection=Selection(decisions=str(tmp_path))))
