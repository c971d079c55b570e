"""The whole pipeline on generated Pile-format data, DirectRunner, read back with TensorFlow."""

import json
import os
import pathlib
import pydoc_data.topics
import sysconfig

import numpy as np
import pytest

from datagen.pile_files import pile_doc, write_jsonl_gz, write_jsonl_zst
from pipeline import run
from pipeline.dataset import reader, verify
from schemas import manifest
from tokenizer.encoder import load_model_bytes, processor_from_bytes

TRICKY = [
    "    indented code\n\tand a tab\n\n\n  trailing spaces   ",
    "Ünïcödé — “quotes” 日本語のテキスト 🙂 and digits 1234567890",
    " leading space and\r\nCRLF inside text\r\n",
    "x",
]


def _stdlib_texts(limit):
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py"))[:limit]
    return [p.read_text(encoding="utf-8") for p in files]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    code = _stdlib_texts(24)
    topics = [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)[:60]]
    docs_a = [pile_doc(t, "Github") for t in code[:12]] + [
        pile_doc(t, "StackExchange") for t in topics[:30]] + [
        pile_doc(t, "Pile-CC") for t in TRICKY]
    docs_b = [pile_doc(t, "Github") for t in code[12:]] + [
        pile_doc(t, "StackExchange") for t in topics[30:]]
    write_jsonl_zst(root / "00.jsonl.zst", docs_a, frames=3, split_line=True)
    write_jsonl_gz(root / "01.jsonl.gz", docs_b)
    return {"dir": root, "texts": [d["text"] for d in docs_a + docs_b], "docs": docs_a + docs_b}


def _run(*args):
    return run.main([*map(str, args), "--runner=DirectRunner"])


BASE = ["--vocab_size=600", "--seq_len=64", "--shard_bytes=65536", "--chunk_bytes=20000"]


@pytest.fixture(scope="module")
def train_split(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "train"
    assert _run("--input", f"{corpus['dir']}/*.jsonl.*", "--output", out, *BASE,
                "--segment_ids") == 0
    return out


def test_manifest_is_complete_and_valid(train_split, corpus):
    dataset = manifest.load(str(train_split))
    doc = dataset.doc
    assert doc["split"] == "train" and doc["seq_len"] == 64
    assert doc["accounting"] == {"read": len(corpus["texts"]), "written": len(corpus["texts"]),
                                 "filtered": {}, "rejected": {}}
    assert doc["subsets"]["Pile-CC"]["documents"] == len(TRICKY)
    assert sum(s["documents"] for s in doc["subsets"].values()) == len(corpus["texts"])
    assert doc["totals"]["tokens"] == sum(s["tokens"] for s in doc["subsets"].values()) + len(
        corpus["texts"])  # every document token plus one EOS per document
    assert [i["format"] for i in doc["inputs"]] == ["zstd", "gzip"]
    assert doc["tokenizer"]["lossless"] is True
    assert doc["tokenizer"]["trained"]["sample_bytes"] > 0
    assert set(doc["features"]) == {"tokens", "segment_ids", "positions"}
    assert not list(pathlib.Path(train_split).glob(".inprogress-*"))
    assert not (pathlib.Path(train_split) / "tokenizer_sample").exists()


def test_shards_are_near_the_target_size(train_split):
    shards = manifest.load(str(train_split)).shards
    assert len(shards) >= 4
    for shard in shards[:-1]:  # all but the split's last within 2%, across input files
        assert 0.98 * 65536 <= shard["bytes"] <= 65536
    assert not (pathlib.Path(train_split) / ".parts").exists()  # parts removed at the commit


def test_verify_deep_passes(train_split):
    report = verify.verify(str(train_split), deep=True)
    assert report.ok, report.problems
    assert report.records == manifest.load(str(train_split)).doc["totals"]["records"]


def test_decoding_a_split_gives_back_every_document_in_order(train_split, corpus):
    dataset = manifest.load(str(train_split))
    sp = processor_from_bytes(load_model_bytes(dataset.tokenizer_path))
    decoded = [sp.decode(ids.tolist()) for ids in reader.iter_documents(dataset)]
    assert decoded == corpus["texts"]


def test_records_parse_with_plain_tensorflow_from_the_manifest_alone(train_split):
    import tensorflow as tf

    doc = json.loads((pathlib.Path(train_split) / "manifest.json").read_text())
    spec = {name: tf.io.FixedLenFeature([], tf.string) for name in doc["features"]}
    paths = [str(pathlib.Path(train_split) / s["path"]) for s in doc["shards"]]
    count = 0
    for raw in tf.data.TFRecordDataset(paths):
        example = tf.io.parse_single_example(raw, spec)
        for name, feature in doc["features"].items():
            values = tf.io.decode_raw(example[name], getattr(tf, feature["dtype"]),
                                      little_endian=feature["byte_order"] == "little")
            assert values.shape == feature["shape"]
        count += 1
    assert count == doc["totals"]["records"]


def test_rerun_gives_identical_shards_and_manifest(train_split, corpus, tmp_path):
    again = tmp_path / "train"
    assert _run("--input", f"{corpus['dir']}/*.jsonl.*", "--output", again, *BASE,
                "--segment_ids") == 0
    first = manifest.load(str(train_split)).doc
    second = manifest.load(str(again)).doc
    assert [s["sha256"] for s in first["shards"]] == [s["sha256"] for s in second["shards"]]
    assert first["tokenizer"]["sha256"] == second["tokenizer"]["sha256"]
    for doc in (first, second):
        doc.pop("created"), doc.pop("run_id")
        doc["config"].pop("output")
        doc["tokenizer"]["trained"].pop("sampling_seconds")
        doc["tokenizer"]["trained"].pop("training_seconds")
    assert first == second


def test_apply_existing_tokenizer_and_drop_last_records(train_split, corpus, tmp_path):
    model = pathlib.Path(train_split) / "tokenizer.model"
    out = tmp_path / "val"
    assert _run("--input", corpus["dir"] / "01.jsonl.gz", "--output", out, "--seq_len=32",
                "--tokenizer_model", model, "--last_record=drop") == 0
    doc = manifest.load(str(out)).doc
    assert doc["split"] == "val"
    assert doc["tokenizer"]["sha256"] == manifest.load(str(train_split)).tokenizer["sha256"]
    assert doc["tokenizer"]["trained"] is None
    assert doc["totals"]["padding_tokens"] == 0 and doc["totals"]["dropped_records"] >= 1
    assert (out / "tokenizer.model").read_bytes() == model.read_bytes()


def test_bad_records_are_dead_lettered_and_accounted(train_split, tmp_path, capsys):
    model = pathlib.Path(train_split) / "tokenizer.model"
    lines = [pile_doc("good one", "A"), b'{"text": "broken', "", pile_doc("", "A"),
             b'{"text": 5}', pile_doc("excluded", "Books3"), b'{"text": "a\xffb"}',
             pile_doc("good two", "B")]
    write_jsonl_zst(tmp_path / "in" / "bad.jsonl.zst", lines) if (tmp_path / "in").mkdir() is None \
        else None
    out = tmp_path / "out"
    args = ["--input", tmp_path / "in", "--output", out, "--seq_len=16",
            "--tokenizer_model", model, "--exclude_subsets=Books3"]
    assert _run(*args, "--max_bad_fraction=0.1") == 2  # 3 of 8 rejected: too many
    assert "3 of 8 records were rejected" in capsys.readouterr().err
    assert not (out / "manifest.json").exists()
    assert _run(*args, "--max_bad_fraction=0.5", "--overwrite") == 0
    doc = manifest.load(str(out)).doc
    acct = doc["accounting"]
    assert acct == {"read": 8, "written": 2,
                    "filtered": {"blank_line": 1, "empty_text": 1, "subset_excluded": 1},
                    "rejected": {"invalid_json": 1, "invalid_utf8": 1, "text_not_string": 1}}
    assert acct["read"] == acct["written"] + sum(acct["filtered"].values()) + sum(
        acct["rejected"].values())
    letters = [json.loads(line) for line in (out / doc["dead_letters"][0]["path"]).read_text()
               .splitlines()]
    assert [(d["line"], d["reason"]) for d in letters] == [
        (2, "invalid_json"), (5, "text_not_string"), (7, "invalid_utf8")]
    assert letters[0]["file"].endswith("bad.jsonl.zst")
    assert letters[0]["excerpt"] == '{"text": "broken'
    # --on_bad_record=fail stops with the file and line named, no trace.
    assert _run(*args, "--on_bad_record=fail", "--overwrite") == 2
    err = capsys.readouterr().err
    assert "bad.jsonl.zst line 2" in err and "invalid_json" in err and "Traceback" not in err


def test_complete_dataset_is_not_overwritten_by_accident(train_split, capsys):
    assert _run("--input", "/nonexistent/*.zst", "--output", train_split) == 2
    assert "matches no file" in capsys.readouterr().err
    before = (pathlib.Path(train_split) / "manifest.json").read_bytes()
    model = pathlib.Path(train_split) / "tokenizer.model"
    src = pathlib.Path(train_split).parent / "src.jsonl"
    src.write_text(json.dumps(pile_doc("text")) + "\n")
    assert _run("--input", src, "--output", train_split, "--tokenizer_model", model) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (pathlib.Path(train_split) / "manifest.json").read_bytes() == before


def test_token_ids_equal_the_plain_encoder(train_split, corpus):
    dataset = manifest.load(str(train_split))
    sp = processor_from_bytes(load_model_bytes(dataset.tokenizer_path))
    written = [ids.tolist() for ids in reader.iter_documents(dataset)]
    assert written == [sp.encode(text) for text in corpus["texts"]]
    assert os.path.getsize(dataset.tokenizer_path) == len(load_model_bytes(dataset.tokenizer_path))
    assert np.all(np.array([len(w) for w in written]) > 0)


def test_roundtrip_tool_and_the_once_lossy_character(train_split, tmp_path):
    """U+2581, which plain SentencePiece decodes as a space, is written as its byte pieces."""
    from pipeline.dataset import roundtrip
    from tokenizer.backends import documented_encode

    model = pathlib.Path(train_split) / "tokenizer.model"
    write_jsonl_zst(tmp_path / "in.jsonl.zst", [pile_doc("plain text"), pile_doc("a\u2581b", "X")])
    out = tmp_path / "out"
    assert _run("--input", tmp_path / "in.jsonl.zst", "--output", out, "--seq_len=16",
                "--tokenizer_model", model) == 0
    dataset = manifest.load(str(out))
    doc = dataset.doc
    assert doc["totals"]["lossy_documents"] == 0 and doc["subsets"]["X"]["lossy_documents"] == 0
    sp = processor_from_bytes(load_model_bytes(str(model)))
    written = [ids.tolist() for ids in reader.iter_documents(dataset)]
    assert written[1] == documented_encode(sp, "a\u2581b") != sp.encode("a\u2581b")
    assert sp.decode(written[1]) == "a\u2581b"
    result = roundtrip.check(str(out), check_ids=True)
    assert (result.documents, result.lossy, result.mismatches) == (2, 0, [])
    assert roundtrip.check(str(train_split)).mismatches == []


def test_encoder_pool_and_in_process_encoder_write_identical_shards(train_split, corpus, tmp_path):
    """In this thread, in a process pool, in encoder threads (the default), and with the
    sentencepiece backend's word cache: the same bytes."""
    model = pathlib.Path(train_split) / "tokenizer.model"
    shas = []
    for i, flags in enumerate([["--encode_processes=1"], ["--encode_processes=2"], [],
                               ["--encoder=sentencepiece", "--encode_processes=1"]]):
        out = tmp_path / f"p{i}"
        assert _run("--input", corpus["dir"] / "00.jsonl.zst", "--output", out, "--seq_len=64",
                    "--chunk_bytes=8000", "--tokenizer_model", model, *flags, "--split=s") == 0
        shas.append([s["sha256"] for s in manifest.load(str(out)).shards])
    assert shas[0] == shas[1] == shas[2] == shas[3]
