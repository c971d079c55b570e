"""Shared, session-scoped tokenizers trained in seconds on this Python's own stdlib sources."""

from __future__ import annotations

import glob
import io
import os
import pydoc_data.topics
import sysconfig

import pytest
import sentencepiece as spm

from tokenizer.encoder import load_model_bytes, processor_from_bytes
from tokenizer.spec import TrainOptions
from tokenizer.train import TrainedTokenizer, train_from_texts

TEST_VOCAB_SIZE = 1000


def stdlib_texts(*, skip: int = 0, max_chars: int = 2_000_000) -> list[str]:
    """Top-level stdlib .py files, in name order from ``skip``, up to about ``max_chars``."""
    root = sysconfig.get_paths()["stdlib"]
    texts: list[str] = []
    total = 0
    for path in sorted(glob.glob(os.path.join(root, "*.py")))[skip:]:
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
        total += len(texts[-1])
        if total >= max_chars:
            break
    return texts


@pytest.fixture(scope="session")
def training_texts() -> list[str]:
    return stdlib_texts(max_chars=1_500_000) + list(pydoc_data.topics.topics.values())


@pytest.fixture(scope="session")
def trained(tmp_path_factory, training_texts) -> TrainedTokenizer:
    output_dir = str(tmp_path_factory.mktemp("tokenizer"))
    options = TrainOptions(vocab_size=TEST_VOCAB_SIZE, num_threads=2)
    return train_from_texts(texts=training_texts, output_dir=output_dir, options=options)


@pytest.fixture(scope="session")
def model_bytes(trained) -> bytes:
    return load_model_bytes(trained.model_path)


@pytest.fixture(scope="session")
def processor(model_bytes) -> spm.SentencePieceProcessor:
    return processor_from_bytes(model_bytes)


def _train_default(texts: list[str], **kwargs) -> bytes:
    """SentencePiece defaults (NFKC, whitespace folding, dummy prefix) on short lines."""
    lines = [line for text in texts for line in text.splitlines() if line.strip()]
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=writer, minloglevel=2, **kwargs
    )
    return writer.getvalue()


@pytest.fixture(scope="session")
def default_unigram_bytes(training_texts) -> bytes:
    return _train_default(training_texts[:30], vocab_size=TEST_VOCAB_SIZE)


@pytest.fixture(scope="session")
def default_bpe_bytes(training_texts) -> bytes:
    return _train_default(training_texts[:30], vocab_size=TEST_VOCAB_SIZE, model_type="bpe")
