"""Hostile inputs: manifest paths that escape, decompression bombs, deep nesting, no pickle."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import sys
import zlib

import pytest
import zstandard

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.config import ReadConfig
from pipeline.read.inputs import InputFile
from pipeline.read.stage import Chunk, DeadLetter, read_file
from schemas import manifest as manifest_lib
from tests.robustness.helpers import REPO, python_module, run_measured

MIB = 1 << 20

ESCAPES = ["../x.tfrecord", "a/../../x.tfrecord", "..", "/etc/passwd", "//host/share/x",
           "s3://other-bucket/x.tfrecord", "file:///etc/passwd", "gs://b/x", "C:\\x.tfrecord",
           "C:x.tfrecord", "a\\..\\..\\x", ""]
# Not escapes, but not canonical either: refused where the reader joins paths (shards, tokenizer).
NON_CANONICAL = ["./x.tfrecord", "a//b.tfrecord", "a/./b.tfrecord"]
CASES = [(field, path) for field in ("shard", "tokenizer", "dead_letters") for path in ESCAPES]
CASES += [(field, path) for field in ("shard", "tokenizer") for path in NON_CANONICAL]


@pytest.mark.parametrize("field, path", CASES)
def test_manifest_paths_must_stay_inside_the_dataset(clean_dataset, field, path):
    doc = json.loads((clean_dataset / "manifest.json").read_text())
    if field == "shard":
        doc["shards"][0]["path"] = path
    elif field == "tokenizer":
        doc["tokenizer"]["file"] = path
    else:
        doc["dead_letters"] = [{"path": path, "records": 0}]
    with pytest.raises(manifest_lib.ManifestError) as err:
        manifest_lib.validate(doc, source="m.json")
    assert "m.json" in str(err.value)


def test_verify_refuses_an_escaping_manifest_without_reading_outside(clean_dataset, tmp_path):
    outside = tmp_path / "outside.tfrecord"
    outside.write_bytes(b"not yours")
    dataset = tmp_path / "ds"
    dataset.mkdir()
    doc = json.loads((clean_dataset / "manifest.json").read_text())
    doc["shards"][0]["path"] = "../outside.tfrecord"
    (dataset / "manifest.json").write_text(json.dumps(doc))
    result = python_module("pipeline.verify", "--manifest", dataset)
    assert result.returncode == 2 and "../outside.tfrecord" in result.stderr
    assert "Traceback" not in result.stderr and "PROBLEM" not in result.stdout


def _zstd_bomb(path: pathlib.Path, *, line_bytes: int, window_log: int | None = None) -> None:
    """A good line, one ``line_bytes`` line of 'a' (a few KB compressed), a good line."""
    if window_log:
        params = zstandard.ZstdCompressionParameters.from_level(3, window_log=window_log)
        cctx = zstandard.ZstdCompressor(compression_params=params)
    else:
        cctx = zstandard.ZstdCompressor(level=3)
    stream = cctx.compressobj()
    parts = [stream.compress(json.dumps(pile_doc("before the bomb")).encode() + b"\n"),
             stream.compress(b'{"text": "')]
    block = b"a" * (4 * MIB)
    for _ in range(line_bytes // len(block)):
        parts.append(stream.compress(block))
    parts += [stream.compress(b'"}\n' + json.dumps(pile_doc("after the bomb")).encode() + b"\n"),
              stream.flush()]
    path.write_bytes(b"".join(parts))


def _gzip_bomb(path: pathlib.Path, *, line_bytes: int) -> None:
    stream = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [stream.compress(b'{"text": "')]
    block = b"a" * (4 * MIB)
    for _ in range(line_bytes // len(block)):
        parts.append(stream.compress(block))
    parts += [stream.compress(b'"}\n' + json.dumps(pile_doc("after")).encode() + b"\n"),
              stream.flush()]
    path.write_bytes(b"".join(parts))


def test_decompression_bombs_are_rejected_with_bounded_memory(tmp_path, tokenizer_model):
    """1 GiB single-line zstd and gzip bombs: line_too_long, RSS within 100 MiB of a clean run."""
    clean, bombs = tmp_path / "clean", tmp_path / "bombs"
    clean.mkdir(), bombs.mkdir()
    write_jsonl_zst(clean / "good.jsonl.zst", [pile_doc("before the bomb"), pile_doc("after")])
    _zstd_bomb(bombs / "bomb.jsonl.zst", line_bytes=1 << 30)
    _gzip_bomb(bombs / "bomb.jsonl.gz", line_bytes=256 * MIB)
    assert (bombs / "bomb.jsonl.zst").stat().st_size < 64 * 1024
    assert (bombs / "bomb.jsonl.gz").stat().st_size < 2 * MIB
    flags = ["--tokenizer_model", tokenizer_model, "--seq_len=64", "--max_line_bytes=1048576",
             "--max_bad_fraction=1"]
    rss = {}
    for name, src in (("clean", clean), ("bombs", bombs)):
        code, output, rss[name] = run_measured(
            [sys.executable, "-m", "pipeline.run", "--input", str(src), "--output",
             str(tmp_path / f"out-{name}"), *map(str, flags)])
        assert code == 0, output[-3000:]
    print(f"peak RSS: clean run {rss['clean']:.0f} MiB, with bombs {rss['bombs']:.0f} MiB")
    assert rss["bombs"] < rss["clean"] + 100, rss

    doc = json.loads((tmp_path / "out-bombs" / "manifest.json").read_text())
    assert doc["accounting"] == {"read": 5, "written": 3, "filtered": {},
                                 "rejected": {"line_too_long": 2}}
    letters = [json.loads(line) for entry in doc["dead_letters"]
               for line in (tmp_path / "out-bombs" / entry["path"]).read_text().splitlines()]
    details = sorted((pathlib.Path(d["file"]).name, d["line"], d["detail"]) for d in letters)
    assert details == [
        ("bomb.jsonl.gz", 1, f"{256 * MIB + 12} bytes > --max_line_bytes=1048576"),
        ("bomb.jsonl.zst", 2, f"{(1 << 30) + 12} bytes > --max_line_bytes=1048576"),
    ]


def test_long_window_bomb_is_refused_by_the_window_limit(tmp_path):
    """A 2 GiB-window frame would make the decoder keep up to 2 GiB of history."""
    path = tmp_path / "bomb.jsonl.zst"
    _zstd_bomb(path, line_bytes=64 * MIB, window_log=31)
    items = list(read_file(InputFile(0, str(path), os.path.getsize(path)),
                           config=ReadConfig(max_window_bytes=8 * MIB, max_line_bytes=MIB)))
    letters = [item for item in items if isinstance(item, DeadLetter)]
    assert [(d.line, d.reason) for d in letters] == [(1, "window_too_large")]
    assert not [item for item in items if isinstance(item, Chunk)]


def test_deeply_nested_json_is_rejected_not_a_crash(tmp_path):
    path = write_jsonl_zst(tmp_path / "nested.jsonl.zst", [
        pile_doc("fine"), "[" * 200_000 + "]" * 200_000,
        '{"text": ' + "[" * 100_000 + '"x"' + "]" * 100_000 + "}", pile_doc("fine too")])
    items = list(read_file(InputFile(0, path, os.path.getsize(path)), config=ReadConfig()))
    letters = [(d.line, d.reason) for d in items if isinstance(d, DeadLetter)]
    assert letters == [(2, "invalid_json"), (3, "invalid_json")]
    assert [d.text for c in items if isinstance(c, Chunk) for d in c.documents] == [
        "fine", "fine too"]


_UNSAFE_CALLS = {("pickle", "load"), ("pickle", "loads"), ("marshal", "loads"),
                 ("dill", "load"), ("dill", "loads"), ("yaml", "load"), ("cloudpickle", "loads"),
                 (None, "eval"), (None, "exec")}


def test_no_pickle_or_eval_of_data_in_the_project():
    found = []
    for package in ("pipeline", "schemas", "tokenizer", "trainer"):
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Name):
                    key = (None, func.id)
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    key = (func.value.id, func.attr)
                else:
                    continue
                if key in _UNSAFE_CALLS:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {key}")
                if key[1] == "load" and key[0] in ("np", "numpy") and any(
                        k.arg == "allow_pickle" for k in node.keywords):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: np.load(allow_pickle)")
    assert found == []

