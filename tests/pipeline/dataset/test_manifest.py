"""manifest.py: the Summary accumulator (any merge order, same manifest), accounting, totals,
and the commit step that refuses a run over --max_bad_fraction, one whose lines, as Read split
them, were not all counted exactly once downstream (a chunk lost or duplicated before Parse), and
one whose documents did not all reach the part files once per copy, or whose parts' records did
not all reach the shards (a chunk lost or duplicated after Parse)."""

import collections
import json
import os
import random

import pytest

from datagen.pile_files import pile_doc, write_jsonl
from pipeline import run
from pipeline.config import PipelineConfig, ReadConfig
from pipeline.dataset import verify
from pipeline.dataset.manifest import (
    DocumentsUnaccounted,
    LinesUnaccounted,
    TooManyBadRecords,
    _CommitManifestFn,
    _SummaryFn,
    accounting,
    build_manifest,
    unaccounted_files,
    unwritten_documents,
)
from pipeline.dataset.statistics import FileParts, Summary
from pipeline.read import stage
from pipeline.read.inputs import InputFile
from pipeline.read.stage import ReadStats
from pipeline.tokenize.subset_stats import SubsetStats
from pipeline.write.dead_letters import DeadLetterFile
from pipeline.write.pack import PackStats, _PackFn
from pipeline.write.parts import ChunkStats, PartDocuments, _WritePartFn
from pipeline.write.shard_plan import PARTS_DIR
from pipeline.write.shards import ShardInfo
from schemas import manifest as manifest_schema
from schemas.dataset_spec import DatasetSpec

SHA = "ab" * 32
SPEC = DatasetSpec(seq_len=16, vocab_size=300)
TOKENIZER = {"file": "tokenizer.model", "sha256": SHA, "vocab_size": 300,
             "special_ids": {"pad": 0, "eos": 1, "unk": 2, "bos": 3}, "lossless": True}
INPUTS = [InputFile(index=0, path="in/a.jsonl.zst", bytes=900),
          InputFile(index=1, path="in/b.jsonl", bytes=400)]


def _read_stats(index, path, fmt, *, documents, filtered=(), rejected=(), lines=None):
    """A whole file's statistics; ``lines`` (Read's count) by default adds up."""
    filtered, rejected = collections.Counter(dict(filtered)), collections.Counter(dict(rejected))
    if lines is None:
        lines = documents + sum(filtered.values()) + sum(rejected.values())
    return ReadStats(file_index=index, path=path, format=fmt, lines=lines, documents=documents,
                     filtered=filtered, rejected=rejected)


def _items():
    """Everything one small run's stages emit: 3 shards, 1 dead-letter file, 2 files' read
    statistics, 3 chunks' pack statistics with their subsets, and their parts' documents."""
    return [
        ShardInfo("train-00001-of-00003.tfrecord", 300, SHA, 3, 40, 8),
        ShardInfo("train-00000-of-00003.tfrecord", 1000, SHA, 10, 150, 10),
        ShardInfo("train-00002-of-00003.tfrecord", 200, SHA, 2, 30, 2),
        DeadLetterFile("dead_letters/train-00000.jsonl", 2),
        _read_stats(0, "in/a.jsonl.zst", "zstd", documents=5, filtered={"blank_line": 1},
                    rejected={"invalid_json": 2}),
        _read_stats(1, "in/b.jsonl", "plain", documents=3,
                    filtered={"blank_line": 2, "empty_text": 1}),
        ChunkStats(PackStats(records=10, tokens=150, padding_tokens=10, partial_records=1),
                   {"A": SubsetStats(3, 100, 120, 0)}),
        ChunkStats(PackStats(records=3, tokens=40, padding_tokens=8, partial_records=1,
                             dropped_records=1, dropped_tokens=5),
                   {"A": SubsetStats(2, 30, 30, 1)}),
        ChunkStats(PackStats(records=2, tokens=30, padding_tokens=2, partial_records=1),
                   {"B": SubsetStats(3, 40, 62, 0)}),
        PartDocuments(0, 0, 3, copies=3), PartDocuments(0, 0, 2, copies=2),
        PartDocuments(1, 0, 3, copies=3),
    ]


def _config(tmp_path, max_bad_fraction=0.5):
    return PipelineConfig(input="in", output=str(tmp_path / "train"), seq_len=16,
                          read=ReadConfig(max_bad_fraction=max_bad_fraction))


def _summary(items) -> Summary:
    summary = Summary()
    for item in items:
        summary.add(item)
    return summary


def _manifest(summary, tmp_path) -> dict:
    return build_manifest(summary, config=_config(tmp_path), spec=SPEC, tokenizer=TOKENIZER,
                          inputs=INPUTS, created="2024-01-01T00:00:00+00:00")


def test_summary_add_sorts_each_kind_of_statistic():
    summary = _summary(_items())
    assert [s.path for s in summary.shards] == ["train-00001-of-00003.tfrecord",
                                                "train-00000-of-00003.tfrecord",
                                                "train-00002-of-00003.tfrecord"]
    assert summary.dead_letters == [DeadLetterFile("dead_letters/train-00000.jsonl", 2)]
    assert [f.file_index for f in summary.files] == [0, 1]
    assert summary.pack == PackStats(records=15, tokens=220, padding_tokens=20,
                                     partial_records=3, dropped_records=1, dropped_tokens=5)
    assert summary.subsets == {"A": SubsetStats(5, 130, 150, 1), "B": SubsetStats(3, 40, 62, 0)}
    assert summary.parts == {0: FileParts(5, 5, 5), 1: FileParts(3, 3, 3)}


def test_summary_refuses_a_statistic_no_total_counts():
    with pytest.raises(TypeError, match="no manifest total counts a tuple"):
        Summary().add((PackStats(), {}))


def test_accounting_read_is_written_plus_filtered_plus_rejected():
    assert accounting(_summary(_items())) == {
        "read": 14,  # Read's 14 lines: 8 written + 4 filtered + 2 rejected
        "written": 8,
        "filtered": {"blank_line": 3, "empty_text": 1},
        "rejected": {"invalid_json": 2},
    }
    assert accounting(Summary()) == {"read": 0, "written": 0, "filtered": {}, "rejected": {}}


def test_accounting_read_is_reads_own_count_not_the_sum_of_the_others():
    """A stream error is a rejection, not a line; a lost line shows as read > the rest."""
    truncated = ReadStats(file_index=0, path="in/a.jsonl.zst", format="zstd", lines=4,
                          stream_errors=1, documents=4, filtered=collections.Counter(),
                          rejected=collections.Counter({"truncated_stream": 1}))
    lost = _read_stats(1, "in/b.jsonl", "plain", documents=3, lines=5)  # 2 lines never counted
    assert accounting(_summary([truncated]))["read"] == 4 + 1  # = 4 written + 1 rejected
    counts = accounting(_summary([truncated, lost]))
    assert counts["read"] == 5 + 5 and counts["written"] == 7
    assert counts["read"] != counts["written"] + 1  # verify's "adds up" fails, as it should


def test_build_manifest_totals_come_from_shards_pack_statistics_and_subsets(tmp_path):
    doc = _manifest(_summary(_items()), tmp_path)
    assert doc["totals"] == {
        "shards": 3, "bytes": 1500, "records": 15, "tokens": 220, "padding_tokens": 20,
        "partial_records": 3, "dropped_records": 1, "dropped_tokens": 5,
        "documents": 8, "text_bytes": 170, "lossy_documents": 1,
    }
    assert [s["path"] for s in doc["shards"]] == sorted(s["path"] for s in doc["shards"])
    assert doc["subsets"] == {
        "A": {"documents": 5, "bytes": 130, "tokens": 150, "lossy_documents": 1},
        "B": {"documents": 3, "bytes": 40, "tokens": 62, "lossy_documents": 0},
    }
    assert doc["inputs"] == [
        {"path": "in/a.jsonl.zst", "bytes": 900, "format": "zstd", "documents": 5},
        {"path": "in/b.jsonl", "bytes": 400, "format": "plain", "documents": 3}]
    assert doc["split"] == "train" and doc["config"]["seq_len"] == 16
    manifest_schema.validate(doc, source="test")
    assert verify.check_consistency(doc) == []  # what verify checks, the builder gets right


def test_merging_partial_summaries_in_any_order_gives_the_same_manifest(tmp_path):
    reference = _manifest(_summary(_items()), tmp_path)
    fn = _SummaryFn()
    rng = random.Random(0)
    for _ in range(20):
        items = _items()
        rng.shuffle(items)
        cuts = sorted(rng.sample(range(len(items) + 1), 2))
        parts = [items[:cuts[0]], items[cuts[0]:cuts[1]], items[cuts[1]:]]
        accumulators = []
        for part in parts:
            accumulator = fn.create_accumulator()
            for item in part:
                accumulator = fn.add_input(accumulator, item)
            accumulators.append(accumulator)
        rng.shuffle(accumulators)
        merged = fn.extract_output(fn.merge_accumulators(accumulators))
        assert _manifest(merged, tmp_path) == reference
        assert merged.parts == {0: FileParts(5, 5, 5), 1: FileParts(3, 3, 3)}


def test_merge_does_not_change_the_merged_summary():
    first, second = _summary(_items()[:5]), _summary(_items()[5:])
    before = json.dumps(second.subsets, default=vars, sort_keys=True)
    first.merge(second)
    first.merge(_summary(_items()[6:7]))
    assert json.dumps(second.subsets, default=vars, sort_keys=True) == before


def _commit(summary, tmp_path, max_bad_fraction, inputs=INPUTS[:1]):
    config = _config(tmp_path, max_bad_fraction)
    (tmp_path / "train").mkdir(exist_ok=True)
    fn = _CommitManifestFn(config=config, spec=SPEC, tokenizer=TOKENIZER, inputs=inputs)
    return list(fn.process(summary))


def _one_rejected_of_four() -> Summary:
    return _summary([_read_stats(0, "in/a.jsonl.zst", "zstd", documents=3,
                                 rejected={"invalid_utf8": 1}),
                     DeadLetterFile("dead_letters/train-00000.jsonl", 1),
                     PartDocuments(0, 0, 3, copies=3)])


def test_commit_at_the_limit_writes_the_manifest(tmp_path):
    (path,) = _commit(_one_rejected_of_four(), tmp_path, max_bad_fraction=0.25)  # 1/4 = 0.25
    doc = manifest_schema.load(path, check_files=False).doc
    assert path == str(tmp_path / "train" / "manifest.json")
    assert doc["accounting"] == {"read": 4, "written": 3, "filtered": {},
                                 "rejected": {"invalid_utf8": 1}}


def test_commit_over_the_limit_raises_and_writes_nothing(tmp_path):
    with pytest.raises(TooManyBadRecords) as raised:
        _commit(_one_rejected_of_four(), tmp_path, max_bad_fraction=0.24)
    message = str(raised.value)
    assert "1 of 4 records were rejected (25.00% > --max_bad_fraction=0.24)" in message
    assert "{'invalid_utf8': 1}" in message and "dead_letters" in message
    assert not (tmp_path / "train" / "manifest.json").exists()
    assert TooManyBadRecords.exit_code == 2


def test_commit_of_an_empty_run_does_not_divide_by_zero(tmp_path):
    (path,) = _commit(Summary(), tmp_path, max_bad_fraction=0.0, inputs=[])
    assert manifest_schema.load(path).doc["totals"]["documents"] == 0


def test_the_encoder_record_sums_each_backends_chunks_in_any_order(tmp_path):
    from tokenizer.guard import EncodeStats

    chunks = [EncodeStats("gigatoken", "0.10.0", documents=5, checked_documents=2,
                          space_symbol_documents=1),
              EncodeStats("gigatoken", "0.10.0", documents=2, checked_documents=1, mismatches=1,
                          fallback_chunks=1),
              EncodeStats("sentencepiece", "0.2.3", "gigatoken: not installed", documents=1)]
    expected = {
        "backends": [
            {"name": "gigatoken", "version": "0.10.0", "reason": "", "documents": 7},
            {"name": "sentencepiece", "version": "0.2.3", "reason": "gigatoken: not installed",
             "documents": 1}],
        "checked_documents": 3, "mismatches": 1, "fallback_chunks": 1, "space_symbol_documents": 1}
    for seed in range(3):
        items = _items() + chunks
        random.Random(seed).shuffle(items)
        doc = _manifest(_summary(items), tmp_path)
        assert doc["encoder"] == expected
        manifest_schema.validate(doc, source="test")
    assert chunks[0].documents == 5  # the inputs are not changed by summing


def _lines_of_one_file() -> list:
    """Read's part of in/a.jsonl.zst (7 lines, one too long: Read rejects it itself), then the
    parts of its two chunks as Parse counts them (3 + 1 written, 1 blank, 1 invalid)."""
    return [_read_stats(0, "in/a.jsonl.zst", "zstd", documents=0, lines=7,
                        rejected={"line_too_long": 1}),
            _read_stats(0, "in/a.jsonl.zst", "", documents=3, filtered={"blank_line": 1},
                        lines=0),
            _read_stats(0, "in/a.jsonl.zst", "", documents=1, rejected={"invalid_json": 1},
                        lines=0)]


def _truncated_file() -> list:
    """in/b.jsonl: 2 lines, then a truncated stream: a dead letter that is not a line."""
    read = _read_stats(1, "in/b.jsonl", "plain", documents=0, lines=2,
                       rejected={"truncated_stream": 1})
    read.stream_errors = 1
    return [read, _read_stats(1, "in/b.jsonl", "", documents=2, lines=0)]


def test_every_line_read_split_must_be_counted_once_downstream():
    whole = _lines_of_one_file() + _truncated_file()
    assert unaccounted_files(_summary(whole), inputs=INPUTS) == []
    lost = [item for i, item in enumerate(whole) if i != 1]  # a chunk never parsed
    assert unaccounted_files(_summary(lost), inputs=INPUTS) == [("in/a.jsonl.zst", 7, 3)]
    twice = whole + [whole[2]]  # a chunk parsed twice
    assert unaccounted_files(_summary(twice), inputs=INPUTS) == [("in/a.jsonl.zst", 7, 9)]
    # Read's own count lost (or a whole file): still caught, not taken as 0 lines.
    assert unaccounted_files(_summary(whole[1:3]), inputs=INPUTS) == [
        ("in/a.jsonl.zst", 0, 6), ("in/b.jsonl", None, 0)]


def test_commit_refuses_unaccounted_lines_before_anything_is_committed(tmp_path):
    parts = tmp_path / "train" / PARTS_DIR
    parts.mkdir(parents=True)
    lost = _lines_of_one_file()[:2] + _truncated_file()
    with pytest.raises(LinesUnaccounted) as raised:
        _commit(_summary(lost), tmp_path, max_bad_fraction=1.0, inputs=INPUTS)
    assert str(raised.value).startswith(
        "input in/a.jsonl.zst: Read split 7 lines, but 5 were counted after the split")
    assert "no manifest was written" in str(raised.value) and LinesUnaccounted.exit_code == 2
    assert not (tmp_path / "train" / "manifest.json").exists() and parts.exists()


def _parts_of_two_files() -> list:
    """What WriteParts reports for the documents of ``_lines_of_one_file`` (3 + 1) and
    ``_truncated_file`` (2), under a mixture that writes one of chunk 0's documents twice: the
    epoch-0 part of chunk 0 holds 3 documents and announces 4 copies, its epoch-1 part holds 1."""
    return [PartDocuments(0, 0, 3, copies=4), PartDocuments(0, 1, 1),
            PartDocuments(0, 0, 1, copies=1), PartDocuments(1, 0, 2, copies=2)]


def test_every_document_parse_passed_on_must_reach_the_parts_once_per_copy():
    parsed = _lines_of_one_file() + _truncated_file()
    whole = _parts_of_two_files()
    assert unwritten_documents(_summary(parsed + whole), inputs=INPUTS) == []
    a = "in/a.jsonl.zst"
    cases = {  # which parts arrive -> (what, passed on, reached) for in/a.jsonl.zst
        "chunk 0 lost": (whole[1:], ("documents", 4, 1)),
        "chunk 1 twice": (whole + whole[2:3], ("documents", 4, 5)),
        "chunk 0's second copy lost": (whole[:1] + whole[2:], ("copies", 5, 4)),
        "chunk 0's second copy twice": (whole + whole[1:2], ("copies", 5, 6)),
    }
    for name, (arrived, wrong) in cases.items():
        assert unwritten_documents(_summary(parsed + arrived), inputs=INPUTS) == [
            (a, *wrong)], name
    # A file none of whose parts arrived is named too; one with no documents needs none.
    assert unwritten_documents(_summary(parsed + whole[:3]), inputs=INPUTS) == [
        ("in/b.jsonl", "documents", 2, 0)]
    empty = _read_stats(1, "in/b.jsonl", "plain", documents=0, filtered={"blank_line": 2})
    assert unwritten_documents(_summary(_lines_of_one_file() + [empty] + whole[:3]),
                               inputs=INPUTS) == []


def test_commit_refuses_unwritten_documents_or_records_before_anything_is_committed(tmp_path):
    parts = tmp_path / "train" / PARTS_DIR
    parts.mkdir(parents=True)
    lost = _lines_of_one_file() + _truncated_file() + _parts_of_two_files()[1:]
    with pytest.raises(DocumentsUnaccounted, match="^input in/a.jsonl.zst: Parse passed on 4 "
                       "documents to write, but 1 reached the part files: a chunk was lost or "
                       "written twice between parsing and writing its part.*no manifest"):
        _commit(_summary(lost), tmp_path, max_bad_fraction=1.0, inputs=INPUTS)
    assert not (tmp_path / "train" / "manifest.json").exists() and parts.exists()
    # The 3 shards hold 3, 10 and 2 records: the first one lost, or the last reported twice.
    for kept, shards, records in [((1, 2), 2, 12), ((0, 1, 2, 2), 4, 17)]:
        with pytest.raises(DocumentsUnaccounted, match=f"^the part files hold 15 records, but "
                           f"the {shards} shards reported {records}: a shard was lost"):
            _commit(_summary([_items()[i] for i in kept] + _items()[3:]), tmp_path,
                    max_bad_fraction=1.0, inputs=INPUTS)
    assert not (tmp_path / "train" / "manifest.json").exists() and parts.exists()
    assert DocumentsUnaccounted.exit_code == 2
    _commit(_summary(_items()), tmp_path, max_bad_fraction=1.0, inputs=INPUTS)  # all arrived
    assert (tmp_path / "train" / "manifest.json").exists() and not parts.exists()


class _ParseLosingAChunk(stage._ParseChunkFn):
    """Parse, but chunk 1 (two documents) never arrives: a lost bundle."""

    def process(self, raw):
        if raw.chunk_index != 1:
            yield from super().process(raw)


class _ParseAChunkTwice(stage._ParseChunkFn):
    """Parse, but chunk 2 (two blank lines) arrives twice: a repeated bundle. (A repeated
    chunk of documents is refused earlier, by the shard plan: two parts with one key.)"""

    def process(self, raw):
        yield from super().process(raw)
        if raw.chunk_index == 2:
            yield from super().process(raw)


def _refused_run(tmp_path, tiny_model, capsys, *flags) -> tuple[str, str]:
    """A run on 8 lines (6 documents, lines 5-6 blank), two a chunk, that must be refused: exit
    2, one ``error:`` line (returned, with the input's path), no manifest."""
    # ~650-byte lines and --chunk_bytes=1024: two lines a chunk, chunk 2 only blank lines.
    docs = [pile_doc(f"{i} " + "a" * 600) for i in range(6)]
    path = write_jsonl(tmp_path / "00.jsonl", docs[:4] + [" " * 600] * 2 + docs[4:])
    raws = [item for item in stage.read_lines(InputFile(0, path, os.path.getsize(path)),
                                              config=ReadConfig(chunk_bytes=1024))
            if isinstance(item, stage.RawChunk)]
    assert [raw.numbers for raw in raws] == [(1, 2), (3, 4), (5, 6), (7, 8)]
    out = tmp_path / "out"
    assert run.main(["--input", str(path), "--output", str(out), "--tokenizer_model",
                     str(tiny_model), "--seq_len=16", "--chunk_bytes=1024",
                     "--encode_processes=1", "--fanout=on", "--runner=DirectRunner",
                     *flags]) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("error:")]
    assert not (out / "manifest.json").exists()
    return path, error


@pytest.mark.parametrize("parse_fn, counted", [(_ParseLosingAChunk, 6), (_ParseAChunkTwice, 10)])
def test_a_run_that_loses_or_repeats_a_chunk_is_refused(parse_fn, counted, tiny_model, tmp_path,
                                                        monkeypatch, capsys):
    monkeypatch.setattr(stage, "_ParseChunkFn", parse_fn)  # between ReadLines and Parse
    path, error = _refused_run(tmp_path, tiny_model, capsys)
    assert error.startswith(f"error: input {path}: Read split 8 lines, but {counted} were "
                            "counted after the split")


class _PackLosingAChunk(_PackFn):
    """Pack, but tokenized chunk 1 (two documents) never arrives: a lost bundle."""

    def process(self, chunk):
        if chunk.chunk_index != 1:
            yield from super().process(chunk)


class _PackAChunkTwice(_PackFn):
    """Pack, but tokenized chunk 1 arrives twice: its part is written twice under one key,
    which the shard plan refuses before the manifest's own check (see the unit tests)."""

    def process(self, chunk):
        yield from super().process(chunk)
        if chunk.chunk_index == 1:
            yield from super().process(chunk)


class _WritePartsLosingACopy(_WritePartFn):
    """WriteParts, but the second copy (epoch 1) of chunk 1 (from Pack) never arrives."""

    def process(self, chunk):
        if (chunk.chunk_index, chunk.epoch) != (1, 1):
            yield from super().process(chunk)


@pytest.mark.parametrize("step, fn, flags, expected", [
    ("pipeline.write.pack._PackFn", _PackLosingAChunk, (), "input {path}: Parse passed on 6 "
     "documents to write, but 4 reached the part files: a chunk was lost or written twice"),
    ("pipeline.write.pack._PackFn", _PackAChunkTwice, (),
     "two parts for (epoch, file, chunk) (0, 0, 1)"),
    # Every document written twice (epochs 0 and 1).
    ("pipeline.write.parts._WritePartFn", _WritePartsLosingACopy, ('--subset_weights={"Pile-CC": '
     '2}',), "input {path}: its chunks' repeats (the mixture) call for 12 copies of its "
     "documents, but 10 reached the part files"),
], ids=["_PackLosingAChunk", "_PackAChunkTwice", "_WritePartsLosingACopy"])
def test_a_run_that_loses_or_repeats_a_tokenized_chunk_is_refused(
        step, fn, flags, expected, tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(step, fn)
    path, error = _refused_run(tmp_path, tiny_model, capsys, *flags)
    assert error.startswith("error: " + expected.format(path=path)), error
