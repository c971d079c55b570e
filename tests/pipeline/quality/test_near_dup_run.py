"""``python -m pipeline.run --dedup=near`` end to end: on a generated corpus with planted
near-duplicates, the copies close to their source are gone from the shards, everything else
is written untouched and in order, and the manifest counts what was removed."""

import json

import pytest
import zstandard

from datagen.near_duplicates import write_corpus
from pipeline import run
from pipeline.dataset import reader
from schemas import manifest
from tokenizer.encoder import load_model_bytes, processor_from_bytes

ARGS = ["--seq_len=64", "--encode_processes=1", "--chunk_bytes=20000", "--split=train",
        "--runner=DirectRunner", "--dedup=near"]


def _texts(paths) -> list[str]:
    out = []
    for path in paths:
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        out.extend(json.loads(line)["text"] for line in data.splitlines())
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("near-run")
    truth = write_corpus(root / "in", seed=5, documents=120, files=2, copy_share=0.4)
    return root, truth


def test_the_run_removes_near_copies_and_records_them(made, tiny_model, tmp_path):
    root, truth = made
    out = tmp_path / "train"
    assert run.main(["--input", str(root / "in"), "--output", str(out),
                     "--tokenizer_model", str(tiny_model), *ARGS]) == 0
    dataset = manifest.load(str(out))
    sp = processor_from_bytes(load_model_bytes(dataset.tokenizer_path))
    written = [sp.decode(ids.tolist()) for ids in reader.iter_documents(dataset)]

    texts = _texts(truth.paths)  # (file, line) order, as read
    lines = [(f, line) for f in range(len(truth.paths))
             for line in range(1, 1 + sum(1 for _ in range(f, truth.documents, 2)))]
    assert len(lines) == len(texts) == truth.documents
    kept = set(written)
    assert written == [t for t in texts if t in kept]  # untouched, in input order
    dropped = {doc for doc, text in zip(lines, texts) if text not in kept}

    high = [p for p in truth.planted if p.jaccard >= 0.9]
    assert len(high) >= 8
    for pair in high:  # the later (file, line) is gone, the earlier kept
        assert max(pair.source, pair.copy) in dropped
        assert min(pair.source, pair.copy) not in dropped
    best = truth.max_similarity()
    assert not {doc for doc in dropped if best.get(doc, 0.0) < 0.5}

    doc = dataset.doc
    assert doc["accounting"]["filtered"] == {"near_duplicate": len(dropped)}
    quality = doc["quality"]
    assert quality["dedup"] == "near"
    assert quality["removed"]["near_duplicate"] == {"Pile-CC": len(dropped)}
    near = quality["near_dup"]
    assert near["verified_pairs"] <= near["candidate_pairs"]
    sizes = {int(size): n for size, n in near["cluster_sizes"].items()}
    assert sum((size - 1) * n for size, n in sizes.items()) == len(dropped)
    assert doc["config"]["quality"]["minhash_perm"] == 128
    for example in near["examples"]:
        assert tuple(example["dropped"]) in dropped and tuple(example["kept"]) not in dropped
