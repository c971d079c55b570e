"""Parse with --filters, without Beam: removed documents counted under their first rule and
subset, one filter record each, every line still accounted for; without --filters, nothing."""

import os

from datagen.filter_plants import clean_documents, plant
from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.config import ReadConfig
from pipeline.read.filter_records import FilterRecord
from pipeline.read.inputs import InputFile
from pipeline.read.stage import Chunk, read_file


def _items(path, **config):
    return list(read_file(InputFile(index=2, path=str(path), bytes=os.path.getsize(path)),
                          config=ReadConfig(**config)))


def _input(tmp_path):
    clean = clean_documents(count=4, seed=3)
    lines = [pile_doc(clean[0], "Pile-CC"),
             pile_doc(plant("c4_curly_bracket", clean[1]), "Pile-CC"),
             pile_doc(plant("c4_curly_bracket", clean[1]), "Github"),  # the profile: kept
             pile_doc(plant("gopher_min_words", clean[2]), "Wikipedia (en)"),
             pile_doc(clean[3], "Github")]
    return write_jsonl_zst(tmp_path / "in.jsonl.zst", lines)


def test_removed_documents_are_counted_and_recorded_with_their_first_rule(tmp_path):
    items = _items(_input(tmp_path), filters=("gopher", "c4", "fineweb"))
    records = [i for i in items if isinstance(i, FilterRecord)]
    assert [(r.line, r.subset, r.rule) for r in records] == [
        (2, "Pile-CC", "c4_curly_bracket"), (4, "Wikipedia (en)", "gopher_min_words")]
    assert records[1].detail.startswith("gopher_min_words: 45 (threshold 50)")
    assert records[0].to_json()["reason"] == "filtered" and records[0].file_index == 2
    kept = [d.line for c in items if isinstance(c, Chunk) for d in c.documents]
    assert kept == [1, 3, 5]
    stats = items[-1]
    assert stats.filtered == {"c4_curly_bracket": 1, "gopher_min_words": 1}
    assert stats.filtered_by_subset == {("c4_curly_bracket", "Pile-CC"): 1,
                                        ("gopher_min_words", "Wikipedia (en)"): 1}
    assert stats.lines == stats.accounted_lines() == 5 and stats.documents == 3


def test_without_filters_every_document_is_kept_and_nothing_recorded(tmp_path):
    items = _items(_input(tmp_path))
    assert not [i for i in items if isinstance(i, FilterRecord)]
    assert items[-1].documents == 5 and not items[-1].filtered


def test_profile_all_and_subset_overrides_change_what_is_removed(tmp_path):
    path = _input(tmp_path)
    every = _items(path, filters=("c4",), filter_profile="all")
    # Github's bracket too now, and the short document has too few sentences for C4
    assert every[-1].filtered == {"c4_curly_bracket": 2, "c4_min_sentences": 1}
    spared = _items(path, filters=("c4",),
                    filter_subsets='{"Pile-CC": {"c4_curly_bracket": false}}')
    assert not spared[-1].filtered
