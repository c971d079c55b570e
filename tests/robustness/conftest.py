"""Fixtures of the robustness tests: one clean dataset (and its tokenizer) per session."""

from __future__ import annotations

import pytest

from datagen.pile_files import pile_doc, write_jsonl_gz, write_jsonl_zst
from tests.robustness.helpers import SMALL, run_inprocess, text


def good_docs(seed: int, count: int, words: int = 300) -> list[dict]:
    subsets = ("Pile-CC", "Github", "Wikipedia (en)")
    return [pile_doc(text(seed * 1000 + i, words), subsets[i % 3]) for i in range(count)]


@pytest.fixture(scope="session")
def clean_dataset(tmp_path_factory):
    """A complete dataset over two generated files: several shards, a trained tokenizer."""
    src = tmp_path_factory.mktemp("clean-src")
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(1, 40), frames=2, split_line=True)
    write_jsonl_gz(src / "01.jsonl.gz", good_docs(2, 30))
    out = tmp_path_factory.mktemp("clean") / "train"
    assert run_inprocess("--input", src, "--output", out, "--vocab_size=400", *SMALL) == 0
    return out


@pytest.fixture(scope="session")
def tokenizer_model(clean_dataset):
    """A small trained SentencePiece model (vocab 400) to apply with --tokenizer_model."""
    return clean_dataset / "tokenizer.model"
