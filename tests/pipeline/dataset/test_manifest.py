"""manifest.py: the Summary accumulator (any merge order, same manifest), accounting, totals,
and the commit step that refuses a run over --max_bad_fraction."""

import collections
import json
import random

import pytest

from pipeline.config import PipelineConfig, ReadConfig
from pipeline.dataset import verify
from pipeline.dataset.manifest import (
    Summary,
    TooManyBadRecords,
    _CommitManifestFn,
    _SummaryFn,
    accounting,
    build_manifest,
)
from pipeline.read.inputs import InputFile
from pipeline.read.stage import ReadStats
from pipeline.tokenize.subset_stats import SubsetStats
from pipeline.write.dead_letters import DeadLetterFile
from pipeline.write.pack import PackStats
from pipeline.write.shards import ShardInfo
from schemas import manifest as manifest_schema
from schemas.dataset_spec import DatasetSpec

SHA = "ab" * 32
SPEC = DatasetSpec(seq_len=16, vocab_size=300)
TOKENIZER = {"file": "tokenizer.model", "sha256": SHA, "vocab_size": 300,
             "special_ids": {"pad": 0, "eos": 1, "unk": 2, "bos": 3}, "lossless": True}
INPUTS = [InputFile(index=0, path="in/a.jsonl.zst", bytes=900),
          InputFile(index=1, path="in/b.jsonl", bytes=400)]


def _read_stats(index, path, fmt, *, documents, filtered=(), rejected=()):
    return ReadStats(file_index=index, path=path, format=fmt, documents=documents,
                     filtered=collections.Counter(dict(filtered)),
                     rejected=collections.Counter(dict(rejected)))


def _items():
    """Everything one small run's stages emit: 3 shards, 1 dead-letter file, 2 files' read
    statistics, 3 chunks' pack statistics with their subsets."""
    return [
        ShardInfo("train-00001-of-00003.tfrecord", 300, SHA, 3, 40, 8),
        ShardInfo("train-00000-of-00003.tfrecord", 1000, SHA, 10, 150, 10),
        ShardInfo("train-00002-of-00003.tfrecord", 200, SHA, 2, 30, 2),
        DeadLetterFile("dead_letters/train-00000.jsonl", 2),
        _read_stats(0, "in/a.jsonl.zst", "zstd", documents=5, filtered={"blank_line": 1},
                    rejected={"invalid_json": 2}),
        _read_stats(1, "in/b.jsonl", "plain", documents=3,
                    filtered={"blank_line": 2, "empty_text": 1}),
        (PackStats(records=10, tokens=150, padding_tokens=10, partial_records=1),
         {"A": SubsetStats(3, 100, 120, 0)}),
        (PackStats(records=3, tokens=40, padding_tokens=8, partial_records=1, dropped_records=1,
                   dropped_tokens=5), {"A": SubsetStats(2, 30, 30, 1)}),
        (PackStats(records=2, tokens=30, padding_tokens=2, partial_records=1),
         {"B": SubsetStats(3, 40, 62, 0)}),
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
    assert summary.pack == {"records": 15, "tokens": 220, "padding_tokens": 20,
                            "partial_records": 3, "dropped_records": 1, "dropped_tokens": 5}
    assert summary.subsets == {"A": SubsetStats(5, 130, 150, 1), "B": SubsetStats(3, 40, 62, 0)}


def test_accounting_read_is_written_plus_filtered_plus_rejected():
    assert accounting(_summary(_items())) == {
        "read": 14,  # 8 written + 4 filtered + 2 rejected
        "written": 8,
        "filtered": {"blank_line": 3, "empty_text": 1},
        "rejected": {"invalid_json": 2},
    }
    assert accounting(Summary()) == {"read": 0, "written": 0, "filtered": {}, "rejected": {}}


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


def test_merge_does_not_change_the_merged_summary():
    first, second = _summary(_items()[:5]), _summary(_items()[5:])
    before = json.dumps(second.subsets, default=vars, sort_keys=True)
    first.merge(second)
    first.merge(_summary(_items()[6:7]))
    assert json.dumps(second.subsets, default=vars, sort_keys=True) == before


def _commit(summary, tmp_path, max_bad_fraction):
    config = _config(tmp_path, max_bad_fraction)
    (tmp_path / "train").mkdir(exist_ok=True)
    fn = _CommitManifestFn(config=config, spec=SPEC, tokenizer=TOKENIZER, inputs=INPUTS)
    return list(fn.process(summary))


def _one_rejected_of_four() -> Summary:
    return _summary([_read_stats(0, "in/a.jsonl.zst", "zstd", documents=3,
                                 rejected={"invalid_utf8": 1}),
                     DeadLetterFile("dead_letters/train-00000.jsonl", 1)])


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
    (path,) = _commit(Summary(), tmp_path, max_bad_fraction=0.0)
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
