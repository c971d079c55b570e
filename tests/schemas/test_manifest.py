"""schemas/manifest.py: validation on write and read, versions, unsafe paths, missing shards."""

import copy
import json

import pytest

from pipeline.config import PipelineConfig
from pipeline.dataset.manifest import Summary, build_manifest
from pipeline.read.stage import ReadStats
from pipeline.write.shards import ShardInfo
from schemas import manifest
from schemas.dataset_spec import DatasetSpec
from schemas.records import RecordSpec

SHA = "0" * 64


def _doc(tmp_path):
    (tmp_path / "train-00000-of-00001.tfrecord").write_bytes(b"x" * 10)
    (tmp_path / "tokenizer.model").write_bytes(b"m")
    summary = Summary()
    summary.add(ShardInfo("train-00000-of-00001.tfrecord", 10, SHA, 1, 4, 0))
    stats = ReadStats(file_index=0, path="in.jsonl.zst", format="zstd", lines=3, documents=2)
    stats.rejected["invalid_json"] += 1
    summary.add(stats)
    tokenizer = {"file": "tokenizer.model", "sha256": SHA, "vocab_size": 300,
                 "special_ids": {"pad": 0, "eos": 1, "unk": 2, "bos": 3}, "lossless": True}
    config = PipelineConfig(input="in.jsonl.zst", output=str(tmp_path), split="train", seq_len=4)
    return build_manifest(summary, config=config, spec=DatasetSpec(seq_len=4, vocab_size=300),
                          tokenizer=tokenizer, inputs=[])


def test_write_then_load(tmp_path):
    doc = _doc(tmp_path)
    assert doc["accounting"] == {"read": 3, "written": 2, "filtered": {},
                                 "rejected": {"invalid_json": 1}}
    path = manifest.write(doc, directory=str(tmp_path))
    dataset = manifest.load(path)
    assert dataset.record_spec == RecordSpec(seq_len=4, token_dtype="uint16")
    assert dataset.shard_paths() == [str(tmp_path / "train-00000-of-00001.tfrecord")]
    assert manifest.load(str(tmp_path)).doc == doc  # a directory works too


@pytest.mark.parametrize("bad_path", ["../x.tfrecord", "/abs.tfrecord", "s3://b/x.tfrecord",
                                      "a/../../x", "a\\b", "./x"])
def test_unsafe_shard_paths_are_refused(tmp_path, bad_path):
    doc = _doc(tmp_path)
    doc["shards"][0]["path"] = bad_path
    with pytest.raises(manifest.ManifestError, match="path|invalid"):
        manifest.validate(doc, source="m.json")


def test_unknown_version_is_named(tmp_path):
    doc = _doc(tmp_path)
    doc["version"] = 99
    with pytest.raises(manifest.ManifestError, match="version 99 is not supported"):
        manifest.validate(doc, source="m.json")


def test_schema_violation_names_the_field(tmp_path):
    doc = _doc(tmp_path)
    doc["shards"][0]["sha256"] = "nothex"
    with pytest.raises(manifest.ManifestError, match="shards/0/sha256"):
        manifest.validate(doc, source="m.json")


def test_missing_or_resized_shard_is_refused_on_load(tmp_path):
    doc = _doc(tmp_path)
    manifest.write(doc, directory=str(tmp_path))
    (tmp_path / "train-00000-of-00001.tfrecord").write_bytes(b"x" * 9)
    with pytest.raises(manifest.ManifestError, match="has 9 bytes"):
        manifest.load(str(tmp_path))
    (tmp_path / "train-00000-of-00001.tfrecord").unlink()
    with pytest.raises(manifest.ManifestError, match="listed but missing"):
        manifest.load(str(tmp_path))


def test_no_manifest_means_incomplete(tmp_path):
    with pytest.raises(manifest.ManifestError, match="not a complete dataset"):
        manifest.load(str(tmp_path))
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(manifest.ManifestError, match="not valid JSON"):
        manifest.load(str(tmp_path))


def test_write_refuses_an_invalid_manifest(tmp_path):
    doc = copy.deepcopy(_doc(tmp_path))
    del doc["totals"]
    with pytest.raises(manifest.ManifestError):
        manifest.write(doc, directory=str(tmp_path))
    assert not (tmp_path / "manifest.json").exists()
    json.dumps(doc)  # still serializable: nothing exotic in a manifest


def test_version_1_is_refused_naming_the_version_and_the_fix(tmp_path):
    doc = _doc(tmp_path)
    doc["version"] = 1
    with pytest.raises(manifest.ManifestError, match="version 1 .*older pilepack.*rebuild"):
        manifest.validate(doc, source="m.json")


def test_each_fact_is_written_once(tmp_path):
    doc = _doc(tmp_path)
    assert doc["seq_len"] == 4 and doc["features"]["tokens"]["shape"] == [5]
    assert "record_len" not in doc["packing"] and "stride" not in doc["packing"]
    assert "token_dtype" not in doc["tokenizer"]
    doc["packing"]["record_len"] = 5  # an old copy coming back is a schema error
    with pytest.raises(manifest.ManifestError, match="packing"):
        manifest.validate(doc, source="m.json")


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["features"]["tokens"].update(shape=[9]), "features.tokens.shape is \\[9\\]"),
    (lambda d: d["features"]["tokens"].update(dtype="int32"), "features.tokens.dtype is 'int32'"),
    (lambda d: d["tokenizer"].update(vocab_size=70000), "features.tokens.dtype is 'uint16'"),
    (lambda d: d["config"].update(seq_len=8), "config.seq_len is 8"),
    (lambda d: d["config"].update(segment_ids=True), "config.segment_ids is True"),
    (lambda d: d["packing"].update(last_record="drop"), "config.last_record is 'pad'"),
])
def test_copies_that_disagree_with_their_owner_are_refused(tmp_path, edit, message):
    doc = _doc(tmp_path)
    edit(doc)
    with pytest.raises(manifest.ManifestError, match=message):
        manifest.validate(doc, source="m.json")


def test_dataset_spec_round_trips_through_the_manifest():
    spec = DatasetSpec(seq_len=7, vocab_size=70000, with_segments=True, last_record="drop")
    fields = spec.manifest_fields(chunk_bytes=1024)
    doc = {**fields, "tokenizer": {"vocab_size": 70000}, "config": {"seq_len": 7}}
    assert DatasetSpec.from_manifest(doc, source="m") == spec
    assert spec.record == RecordSpec(seq_len=7, token_dtype="int32", with_segments=True)


def test_the_shuffles_block_sizes_are_optional_and_checked(tmp_path):
    doc = _doc(tmp_path)
    # A split shuffled before the blocks: no sizes, still valid.
    doc["shuffle"] = {"mode": "global", "seed": 0, "algorithm": "feistel-6"}
    manifest.validate(doc, source="m.json")
    doc["shuffle"].update(block_records=256, window_blocks=16)
    manifest.validate(doc, source="m.json")
    doc["shuffle"]["block_records"] = 0
    with pytest.raises(manifest.ManifestError, match="shuffle/block_records"):
        manifest.validate(doc, source="m.json")


def test_the_decontamination_filter_fields_are_optional_and_checked(tmp_path):
    doc = _doc(tmp_path)
    doc["quality"] = {"normalization": "nfc", "digest": "blake2b-128", "dedup": "off",
                      "exclude_docs_from": [], "excluded_hashes": 0, "removed": {},
                      "decontamination": {"mode": "drop", "ngram": 13}}
    manifest.validate(doc, source="m.json")  # a split made before the filter: still valid
    doc["quality"]["decontamination"].update(filter_bytes=2 << 20, filter_probes=8,
                                             filter_false_positive_rate=0.0004)
    manifest.validate(doc, source="m.json")
    doc["quality"]["decontamination"]["filter_false_positive_rate"] = 1.5
    with pytest.raises(manifest.ManifestError, match="filter_false_positive_rate"):
        manifest.validate(doc, source="m.json")
