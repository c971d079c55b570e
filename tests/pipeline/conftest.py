"""Fixtures of the pipeline tests: one tiny dataset made by the real pipeline, per session.

Two input files (zstd and plain JSON Lines, two subsets, one broken line and one blank line),
tokenized with a 300-piece tokenizer trained by the run itself, seq_len 16, the encoder
in-process: a complete dataset, dead letters included, in a few seconds. Tests that damage a
dataset take a private copy (``dataset_copy``).
"""

from __future__ import annotations

import pathlib
import random
import shutil

import pytest

from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_zst
from pipeline import run

TINY_ARGS = ["--vocab_size=300", "--seq_len=16", "--encode_processes=1", "--chunk_bytes=2000",
             "--max_bad_fraction=0.1", "--runner=DirectRunner"]

_WORDS = ["the", "of", "and", "to", "in", "is", "was", "for", "on", "with", "from", "that",
          "def", "return", "import", "class", "x", "=", "y", "+", "1", "(", ")", ":", ",", ".",
          "0", "42", "café"]


def tiny_text(seed: int, words: int) -> str:
    """Deterministic prose of ``words`` words with a line break now and then."""
    rng = random.Random(seed)
    return "".join(rng.choice(_WORDS) + ("\n" if i % 9 == 8 else " ")
                   for i in range(words)).strip()


@pytest.fixture(scope="session")
def tiny_input(tmp_path_factory) -> dict:
    """``00.jsonl.zst``: 30 "A" documents with a broken line (line 5) and a blank line (line 9);
    ``01.jsonl``: 20 "B" documents. Returns the directory and the texts written, in order."""
    root = tmp_path_factory.mktemp("tiny-in")
    first = [pile_doc(tiny_text(i, 10 + i % 40), "A") for i in range(30)]
    second = [pile_doc(tiny_text(100 + i, 5 + i % 30), "B") for i in range(20)]
    lines = first[:4] + [b'{"text": "broken'] + first[4:7] + [b""] + first[7:]
    write_jsonl_zst(root / "00.jsonl.zst", lines, frames=2)
    write_jsonl(root / "01.jsonl", second)
    return {"dir": root, "texts": [d["text"] for d in first + second]}


@pytest.fixture(scope="session")
def tiny_dataset(tiny_input, tmp_path_factory) -> pathlib.Path:
    """The ``train`` split of ``tiny_input`` (do not modify: take a ``dataset_copy``)."""
    out = tmp_path_factory.mktemp("tiny-out") / "train"
    assert run.main(["--input", str(tiny_input["dir"]), "--output", str(out), *TINY_ARGS]) == 0
    return out


@pytest.fixture(scope="session")
def tiny_model(tiny_dataset) -> pathlib.Path:
    """The dataset's 300-piece SentencePiece model."""
    return tiny_dataset / "tokenizer.model"


@pytest.fixture
def dataset_copy(tiny_dataset, tmp_path) -> pathlib.Path:
    """A private copy of ``tiny_dataset``, to damage."""
    copy = tmp_path / "train"
    shutil.copytree(tiny_dataset, copy)
    return copy
