"""Every kind of damaged input: a dead letter while the rest is processed, or a clear error.

One pipeline run reads a directory holding one generated file per kind of damage (see
``bad_corpus.py`` and docs/robustness.md); each test checks one file's outcome in that run:
the documents that reach the shards (decoded back to text), its dead letters, and the
accounting. Nothing decodable may be lost, and nothing may be lost silently.
"""

from __future__ import annotations

import os
import pathlib

import pytest

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.config import ReadConfig
from pipeline.read import parse
from pipeline.read.inputs import InputFile
from pipeline.read.stage import Chunk, ReadStats, iter_documents, read_file
from tests.robustness import bad_corpus
from tests.robustness.helpers import (
    dead_letters,
    documents_by_file,
    load,
    python_module,
    run_inprocess,
    text,
)

CASES = {case.name: case for case in bad_corpus.build_cases()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    for case in CASES.values():
        case.write(root / case.name)
    return root


@pytest.fixture(scope="module")
def mixed_run(corpus, tokenizer_model, tmp_path_factory):
    """The pipeline over every damaged file at once (plus nothing else)."""
    out = tmp_path_factory.mktemp("bad-out") / "train"
    assert run_inprocess("--input", corpus, "--output", out, "--tokenizer_model",
                         tokenizer_model, "--seq_len=64", "--max_bad_fraction=1",
                         "--max_window_bytes=2147483648") == 0  # long_window: 2 GiB
    doc = load(out)
    index = {pathlib.Path(entry["path"]).name: i for i, entry in enumerate(doc["inputs"])}
    return {"out": out, "doc": doc, "index": index, "texts": documents_by_file(out),
            "letters": dead_letters(out)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kind_of_damage(mixed_run, corpus, name):
    case = CASES[name]
    i = mixed_run["index"][name]
    assert mixed_run["doc"]["inputs"][i]["format"] == case.format
    # Everything decodable reaches the shards, in order, byte for byte.
    assert mixed_run["texts"].get(i, []) == case.written
    letters = [d for d in mixed_run["letters"] if d["file_index"] == i]
    assert [(d["line"], d["reason"]) for d in letters] == case.letters
    for letter in letters:
        assert letter["file"] == str(corpus / name)
        assert letter["detail"] and set(letter) == {
            "file", "file_index", "line", "offset", "reason", "detail", "excerpt"}
        if letter["reason"] in ("truncated_stream", "corrupt_stream", "window_too_large"):
            assert letter["excerpt"] == ""
            assert "re-download" in letter["detail"] or "--max_window_bytes" in letter["detail"]
        else:  # the excerpt is the start of the bad line itself
            raw = _decompressed(corpus / name).split(b"\n")[letter["line"] - 1]
            assert letter["excerpt"] == parse.excerpt(raw)
            assert len(letter["excerpt"]) <= parse.EXCERPT_CHARS


def _decompressed(path: pathlib.Path) -> bytes:
    import zstandard

    data = path.read_bytes()
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return data


def test_accounting_adds_up_and_dead_letters_match(mixed_run):
    doc = mixed_run["doc"]
    acct = doc["accounting"]
    assert acct == bad_corpus.expected_accounting(list(CASES.values()))
    assert acct["read"] == acct["written"] + sum(acct["filtered"].values()) + sum(
        acct["rejected"].values())
    # The dead letters next to the manifest are exactly the rejections, reason by reason.
    by_reason = {}
    for letter in mixed_run["letters"]:
        by_reason[letter["reason"]] = by_reason.get(letter["reason"], 0) + 1
    assert by_reason == acct["rejected"]
    assert sum(d["records"] for d in doc["dead_letters"]) == len(mixed_run["letters"])
    files = sorted(p.name for p in (mixed_run["out"] / "dead_letters").iterdir())
    assert files == sorted(pathlib.Path(d["path"]).name for d in doc["dead_letters"])
    # Written documents: what the shards decode to, and what the subsets count.
    assert sum(len(t) for t in mixed_run["texts"].values()) == acct["written"]
    assert sum(s["documents"] for s in doc["subsets"].values()) == acct["written"]


def test_odd_meta_keeps_the_document_under_an_unknown_subset(corpus):
    case = CASES["bad_meta.jsonl.zst"]
    docs = _read(corpus / case.name)
    assert [d.subset for d in docs] == [
        "Pile-CC", parse.UNKNOWN_SUBSET, parse.UNKNOWN_SUBSET, parse.UNKNOWN_SUBSET,
        "Not A Pile Subset", parse.UNKNOWN_SUBSET, "Github", "Pile-CC"]


def _read(path, **config):
    return list(iter_documents(InputFile(0, str(path), os.path.getsize(path)),
                               config=ReadConfig(**config)))


def test_window_over_the_limit_is_a_dead_letter_naming_the_flag(corpus):
    path = corpus / "long_window.jsonl.zst"
    items = list(read_file(InputFile(3, str(path), os.path.getsize(path)),
                           config=ReadConfig(max_window_bytes=1 << 27)))
    letters = [item for item in items if not isinstance(item, (Chunk, ReadStats))]
    assert [(d.file, d.line, d.reason) for d in letters] == [(str(path), 1, "window_too_large")]
    assert "--max_window_bytes=134217728" in letters[0].detail
    assert "2147483648" in letters[0].detail  # says how far the flag can go
    assert items[-1].rejected == {"window_too_large": 1} and items[-1].documents == 0
    # The default limit is zstd's own (128 MiB); raising the flag to zstd's maximum reads it.
    assert _read(path) == [] and len(_read(path, max_window_bytes=1 << 31)) == 10


@pytest.mark.parametrize("name, flags, expect", [
    ("long_window.jsonl.zst", ["--max_window_bytes=134217728", "--on_bad_record=fail"],
     ["long_window.jsonl.zst line 1", "window_too_large", "--max_window_bytes", "--on_bad_record"]),
    ("", ["--max_bad_fraction=0.01"], ["were rejected", "--max_bad_fraction", "dead_letters"]),
])
def test_cli_errors_are_one_line_without_traceback(corpus, tokenizer_model, tmp_path, name,
                                                   flags, expect):
    result = python_module("pipeline.run", "--input", corpus / name, "--output",
                           tmp_path / "out", "--tokenizer_model", tokenizer_model,
                           "--seq_len=64", *flags)
    assert result.returncode == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error_lines) == 1, result.stderr[-3000:]
    for needle in expect:
        assert needle in error_lines[0]
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.slow
def test_huge_document_goes_through_whole(tmp_path, tokenizer_model):
    """One 50 MiB document (compresses to a few hundred KB, like the shared file)."""
    body = text(5, 2000) + "\n"
    huge = (body * (50 * 2**20 // len(body) + 1))[: 50 * 2**20]
    src = tmp_path / "in"
    src.mkdir()
    write_jsonl_zst(src / "huge.jsonl.zst", [pile_doc("small one"), pile_doc(huge),
                                             pile_doc("small two")])
    assert (src / "huge.jsonl.zst").stat().st_size < 2 * 2**20
    out = tmp_path / "out"
    assert run_inprocess("--input", src, "--output", out, "--tokenizer_model", tokenizer_model,
                         "--seq_len=2048", "--chunk_bytes=1048576") == 0
    doc = load(out)
    assert doc["accounting"]["written"] == 3
    assert doc["totals"]["text_bytes"] == len(huge.encode()) + len("small one") + len("small two")
    texts = documents_by_file(out)[0]
    assert [len(t) for t in texts] == [9, len(huge), 9]
    assert texts[1] == huge
