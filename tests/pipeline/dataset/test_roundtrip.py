"""roundtrip.py: a split decoded and compared with its input files; an input changed after the
run is reported by file and line."""

import json
import pathlib

import pytest

from datagen.pile_files import pile_doc
from pipeline import roundtrip as roundtrip_command
from pipeline import run
from pipeline.dataset import roundtrip

TEXTS = ["first document\n\twith a tab", "second  document", "third: x = y + 1"]


def _lines(texts) -> str:
    return "".join(json.dumps(pile_doc(t)) + "\n" for t in texts)


@pytest.fixture(scope="module")
def split(tiny_model, tmp_path_factory) -> dict:
    """Three documents in one plain JSON Lines file, made into a split with the tiny model."""
    root = tmp_path_factory.mktemp("roundtrip")
    source = root / "in.jsonl"
    source.write_text(_lines(TEXTS))
    out = root / "out"
    assert run.main(["--input", str(source), "--output", str(out), "--seq_len=16",
                     "--tokenizer_model", str(tiny_model), "--encode_processes=1",
                     "--runner=DirectRunner"]) == 0
    return {"source": source, "manifest": str(out / "manifest.json")}


@pytest.fixture
def source(split):
    """The split's input file, put back as it was after the test changes it."""
    path: pathlib.Path = split["source"]
    original = path.read_bytes()
    yield path
    path.write_bytes(original)


def test_an_unchanged_input_matches(split):
    result = roundtrip.check(split["manifest"], check_ids=True)
    assert (result.documents, result.lossy, result.mismatches) == (3, 0, [])


def test_a_changed_text_is_named_by_file_and_line(split, source):
    source.write_text(_lines([TEXTS[0], "second document, edited", TEXTS[2]]))
    result = roundtrip.check(split["manifest"])
    assert result.documents == 3
    assert result.mismatches == [f"{source} line 2: decoded text differs"]


def test_an_appended_document_is_missing_from_the_shards(split, source):
    source.write_text(_lines(TEXTS + ["fourth"]))
    result = roundtrip.check(split["manifest"])
    assert result.documents == 3
    assert result.mismatches == [f"{source} line 4: missing from the shards"]


def test_a_removed_document_leaves_more_in_the_shards(split, source):
    source.write_text(_lines(TEXTS[:2]))
    assert roundtrip.check(split["manifest"]).mismatches == [
        "the shards hold more documents than the input"]


def test_reports_are_capped_but_a_missing_document_is_always_named(split, source):
    source.write_text(_lines(["inserted"] + TEXTS))  # every document shifts by one line
    result = roundtrip.check(split["manifest"], max_reports=2)
    assert result.mismatches == [f"{source} line 1: decoded text differs",
                                 f"{source} line 2: decoded text differs",
                                 f"{source} line 4: missing from the shards"]


def test_the_command_exits_1_on_a_mismatch(split, source, capsys):
    assert roundtrip_command.main(["--manifest", split["manifest"]]) == 0
    assert "OK: 3 documents decoded" in capsys.readouterr().out
    source.write_text(_lines([TEXTS[0], TEXTS[1], "changed"]))
    assert roundtrip_command.main(["--manifest", split["manifest"]]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"MISMATCH {source} line 3: decoded text differs",
                   ("FAILED: 3 documents decoded and compared with the input "
                    "(0 equal but for U+2581 -> space)")]


def test_u2581_round_trips_exactly_and_ids_are_the_documented_encoding(tiny_model, tmp_path):
    """Each literal U+2581 is written as its three byte pieces: no lossy document any more."""
    texts = ["a\u2581b", "\u2581\u2581 indented\u2581", "code: '</s>' and <pad>"]
    source = tmp_path / "in.jsonl"
    source.write_text(_lines(texts))
    out = tmp_path / "out"
    assert run.main(["--input", str(source), "--output", str(out), "--seq_len=16",
                     "--tokenizer_model", str(tiny_model), "--runner=DirectRunner"]) == 0
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["totals"]["lossy_documents"] == 0
    assert doc["encoder"]["space_symbol_documents"] == 2
    assert doc["encoder"]["checked_documents"] == 3  # U+2581 and control pieces: always checked
    assert doc["encoder"]["backends"][0]["name"] == "gigatoken"
    for encoder in ("sentencepiece", "gigatoken"):
        result = roundtrip.check(str(out), check_ids=True, encoder=encoder)
        assert (result.documents, result.lossy, result.mismatches) == (3, 0, [])
