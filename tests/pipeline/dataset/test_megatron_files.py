"""--formats=tfrecord,megatron end to end: the manifest's pairs, verify's checks of them
(damage found), roundtrip's comparison with the records, the same bytes with 1 or 2 worker
processes and with --shuffle=global (Megatron files keep the input's order); the blend
``pipeline.megatron_paths`` prints."""

import hashlib
import pathlib
import shutil

import numpy as np
import pytest

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import megatron_paths, run
from pipeline.dataset import megatron_files, roundtrip
from pipeline.dataset.reader import iter_documents
from pipeline.dataset.verify import verify
from schemas import manifest
from tests.pipeline.conftest import TINY_ARGS, tiny_text

MEGATRON = ["--formats=tfrecord,megatron", "--shard_bytes=65536", "--split=train"]
TWO_WORKERS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


def _megatron_files(directory: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((directory / "megatron").iterdir())}


@pytest.fixture(scope="module")
def megatron_input(tmp_path_factory) -> pathlib.Path:
    """One file of 400 documents (~100 KB of uint16 tokens: two pairs) and a broken line."""
    root = tmp_path_factory.mktemp("megatron-in")
    docs = [pile_doc(tiny_text(i, 20 + i % 140), ("A", "B")[i % 2]) for i in range(400)]
    write_jsonl_zst(root / "00.jsonl.zst", docs[:7] + [b'{"text": "broken'] + docs[7:],
                    frames=2)
    return root


@pytest.fixture(scope="module")
def megatron_dataset(megatron_input, tiny_model, tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("megatron") / "train"
    assert run.main(["--input", str(megatron_input), "--output", str(out), *TINY_ARGS,
                     "--tokenizer_model", str(tiny_model), *MEGATRON]) == 0
    return out


def test_manifest_lists_every_document_once_with_eos(megatron_dataset):
    dataset = manifest.load(str(megatron_dataset))
    section = dataset.doc["megatron"]
    assert dataset.doc["version"] == 3 and dataset.formats == ["tfrecord", "megatron"]
    assert section["dtype"] == "uint16" and section["documents"] == 400
    # Each document and its EOS: the records' label positions exactly (--last_record=pad).
    assert section["tokens"] == dataset.doc["totals"]["tokens"]
    for pair in section["files"]:
        data = (megatron_dataset / pair["bin"]["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pair["bin"]["sha256"]
    eos = dataset.tokenizer["special_ids"]["eos"]
    read = list(megatron_files.iter_documents(dataset))
    assert [d.tolist() for d in read] == [np.append(ids, eos).tolist()
                                          for ids in iter_documents(dataset)]
    assert not (megatron_dataset / ".parts").exists()


def test_verify_and_roundtrip_pass_and_find_damage(megatron_dataset, tmp_path):
    report = verify(str(megatron_dataset))
    assert report.ok and not report.notes, (report.problems, report.notes)
    result = roundtrip.check(str(megatron_dataset))
    assert result.documents == 400 and not result.mismatches
    copy = tmp_path / "train"
    shutil.copytree(megatron_dataset, copy)
    pair = manifest.load(str(copy)).doc["megatron"]["files"][0]
    data = bytearray((copy / pair["bin"]["path"]).read_bytes())
    data[2:4] = data[4:6]  # one token replaced: same size, other sha256, other document
    (copy / pair["bin"]["path"]).write_bytes(bytes(data))
    assert any("sha256" in p and pair["bin"]["path"] in p for p in verify(str(copy)).problems)
    assert any("megatron: document 0 differs" in m for m in roundtrip.check(str(copy)).mismatches)
    (copy / pair["idx"]["path"]).write_bytes(b"MMIDIDX")
    assert any(pair["idx"]["path"] in p for p in verify(str(copy)).problems)
    # Roundtrip: one line naming the file, the rest not compared (not a traceback).
    [mismatch] = roundtrip.check(str(copy)).mismatches
    assert mismatch.startswith(f"megatron: {pair['idx']['path']}: 7 bytes: shorter than the "
                               "index header") and mismatch.endswith("from 0 on not compared")
    shutil.copytree(megatron_dataset, copy, dirs_exist_ok=True)
    last = manifest.load(str(copy)).doc["megatron"]["files"][-1]["bin"]["path"]
    (copy / last).write_bytes((copy / last).read_bytes()[:-2])  # a truncated copy
    [mismatch] = roundtrip.check(str(copy)).mismatches
    assert mismatch.startswith(f"megatron: {last}: ends inside its document "), mismatch


def test_megatron_paths_prints_each_pair_weighted_by_its_tokens(megatron_dataset, capsys):
    pairs = manifest.load(str(megatron_dataset)).doc["megatron"]["files"]
    assert megatron_paths.main([str(megatron_dataset)]) == 0
    words = capsys.readouterr().out.split()
    assert words[0] == "--data-path" and words[1::2] == [str(p["tokens"]) for p in pairs]
    assert megatron_paths.main([str(megatron_dataset), "--scale", "0.5"]) == 0
    assert capsys.readouterr().out.split()[1::2] == [f"{p['tokens'] * 0.5:g}" for p in pairs]
    assert megatron_paths.main([str(megatron_dataset)] * 2 + ["--scale", "2"]) == 2
    assert capsys.readouterr().err == "error: --scale needs one factor per manifest (2), got 1\n"


@pytest.mark.slow
def test_two_workers_and_a_global_shuffle_write_the_same_pairs(megatron_dataset, megatron_input,
                                                                tiny_model, tmp_path):
    common = ["--input", str(megatron_input), *TINY_ARGS, "--tokenizer_model",
              str(tiny_model), *MEGATRON]
    assert run.main([*common, "--output", str(tmp_path / "two"), *TWO_WORKERS]) == 0
    assert run.main([*common, "--output", str(tmp_path / "shuffled"), "--shuffle=global"]) == 0
    expected = _megatron_files(megatron_dataset)
    assert len(expected) == 8  # four pairs
    assert _megatron_files(tmp_path / "two") == expected
    assert _megatron_files(tmp_path / "shuffled") == expected
    assert (manifest.load(str(tmp_path / "two")).doc["megatron"]
            == manifest.load(str(megatron_dataset)).doc["megatron"])
