"""One real run, shared by the export tests: a tokenizer trained on the built-in sample, the
sample's documents packed into a small dataset with it, and the tiny preset trained a few steps
by ``python -m trainer.train`` (``main``), which writes the export at its end."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sentencepiece as spm

from datagen.datasets import write_dataset
from datagen.pile_files import read_records
from datagen.sample.cache import ensure_sample
from tokenizer.spec import EOS_ID, TrainOptions
from tokenizer.train import train_from_texts
from trainer import train
from trainer.export import from_run

SEQ_LEN = 64
VOCAB_SIZE = 1000
RECORDS = 256


@pytest.fixture(scope="session")
def sample_documents() -> dict[str, list[str]]:
    """Every document of the built-in sample, by file (train files first, then val)."""
    sample = ensure_sample()
    paths = [*sample.train_paths, sample.val_path]
    return {path: [record["text"] for record in read_records(path)] for path in paths}


@pytest.fixture(scope="session")
def tokenizer_proto(tmp_path_factory, sample_documents) -> bytes:
    """A tokenizer trained on the sample's train files, as ``pipeline.run`` would train one."""
    texts = [text for path, docs in sample_documents.items() if "train" in path for text in docs]
    options = TrainOptions(vocab_size=VOCAB_SIZE, num_threads=2)
    trained = train_from_texts(
        texts=texts, output_dir=str(tmp_path_factory.mktemp("tokenizer")), options=options
    )
    with open(trained.model_path, "rb") as handle:
        return handle.read()


@pytest.fixture(scope="session")
def dataset(tmp_path_factory, sample_documents, tokenizer_proto) -> str:
    """The first documents packed into RECORDS records (EOS d1 EOS d2 ...); the manifest."""
    processor = spm.SentencePieceProcessor(model_proto=tokenizer_proto)
    stream: list[int] = []
    for ids in processor.encode(next(iter(sample_documents.values()))):
        stream += [EOS_ID, *ids]
        if len(stream) > RECORDS * (SEQ_LEN + 1):
            break
    records = [
        np.array(stream[i * (SEQ_LEN + 1) : (i + 1) * (SEQ_LEN + 1)]) for i in range(RECORDS)
    ]
    return write_dataset(
        str(tmp_path_factory.mktemp("data")),
        shards=[records[: RECORDS // 2], records[RECORDS // 2 :]],
        seq_len=SEQ_LEN,
        vocab_size=processor.vocab_size(),
        tokenizer_bytes=tokenizer_proto,
    )


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory, dataset) -> str:
    model_dir = str(tmp_path_factory.mktemp("run"))
    argv = [
        f"--train_manifest={dataset}",
        f"--model_dir={model_dir}",
        "--preset=tiny",
        "--steps=30",
        "--global_batch_size=8",
        "--learning_rate=3e-3",
        "--warmup_steps=3",
        "--log_every=10",
    ]
    assert train.main(argv) == 0
    return model_dir


@pytest.fixture(scope="session")
def export_dir(run_dir) -> str:
    """The run's ``export/saved_model`` (TF Serving's model base path)."""
    return os.path.join(run_dir, "export", "saved_model")


@pytest.fixture(scope="session")
def trained_run(run_dir) -> from_run.RunModel:
    """The run's model (newest checkpoint) and tokenizer, rebuilt from ``run_dir``."""
    return from_run.load(run_dir)
