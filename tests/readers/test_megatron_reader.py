"""The Megatron pairs read by Megatron-Core's own ``IndexedDataset``, in the readers'
environment (``.venv-readers``, from ``requirements-readers.lock``; docs/testing.md): every
document it reads is the TFRecord shards' document followed by EOS, in order.

Skipped where ``.venv-readers`` is absent, except in CI (``CI`` set), where it fails instead.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import run
from pipeline.dataset.reader import iter_documents
from schemas import manifest
from tests.pipeline.conftest import TINY_ARGS, tiny_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
READERS_PYTHON = ROOT / ".venv-readers" / "bin" / "python"


def readers_python() -> pathlib.Path:
    if not READERS_PYTHON.exists():
        message = (f"{READERS_PYTHON} is missing: make it as README's test command does "
                   "(python3 -m venv .venv-readers && .venv-readers/bin/pip install -r "
                   "requirements-readers.lock)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return READERS_PYTHON


@pytest.mark.slow  # Megatron-Core and torch take ~25 s to import
def test_megatron_core_reads_the_documents_of_the_records(tmp_path):
    python = readers_python()
    docs = [pile_doc(tiny_text(i, 20 + i % 140), ("A", "B")[i % 2]) for i in range(400)]
    (tmp_path / "in").mkdir()
    write_jsonl_zst(tmp_path / "in" / "00.jsonl.zst", docs, frames=2)
    out = tmp_path / "train"
    assert run.main(["--input", str(tmp_path / "in"), "--output", str(out), *TINY_ARGS,
                     "--formats=tfrecord,megatron", "--shard_bytes=65536"]) == 0
    dataset = manifest.load(str(out))
    saved = tmp_path / "read.npz"
    subprocess.run([str(python), str(ROOT / "tests/readers/read_megatron.py"),
                    dataset.manifest_path, str(saved)], check=True, timeout=300,
                   stdout=sys.stdout, stderr=subprocess.PIPE)
    read = np.load(saved)
    eos = dataset.tokenizer["special_ids"]["eos"]
    expected = [np.append(ids, eos) for ids in iter_documents(dataset)]
    assert len(expected) == 400 and len(dataset.doc["megatron"]["files"]) >= 2
    assert read["lengths"].tolist() == [len(d) for d in expected]
    assert read["tokens"].tolist() == np.concatenate(expected).tolist()
    assert read["documents"].tolist() == [f["documents"] for f in dataset.doc["megatron"]["files"]]
    assert read["dtype"].tolist() == ["uint16"] == [dataset.doc["megatron"]["dtype"]]
