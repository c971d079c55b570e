import dataclasses
import os

import numpy as np
import pytest

from datagen.datasets import random_records, write_dataset
from schemas import manifest
from trainer.compat import (
    CompatibilityError,
    check_model_fits,
    check_same_tokenization,
    tokenizer_identity,
    verify_tokenizer_file,
)
from trainer.model import GPTConfig

MODEL = GPTConfig.from_preset("tiny", vocab_size=32, seq_len=8)


def dataset(
    directory, *, seq_len=8, vocab_size=32, tokenizer_bytes=b"tokenizer A", with_segments=False
):
    records = random_records(np.random.default_rng(0), 4, seq_len=seq_len, low=4, high=20)
    return manifest.load(
        write_dataset(
            str(directory),
            shards=[records],
            seq_len=seq_len,
            vocab_size=vocab_size,
            tokenizer_bytes=tokenizer_bytes,
            with_segments=with_segments,
        )
    )


def test_a_matching_dataset_passes(tmp_path):
    data = dataset(tmp_path)
    verify_tokenizer_file(data)
    check_model_fits(data, MODEL, tokenizer=tokenizer_identity(data))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"seq_len": 16}, "seq_len 16 differs from the model's 8"),
        ({"vocab_size": 64}, "vocab_size 64 differs from the model's 32"),
    ],
)
def test_shape_mismatch_is_refused(tmp_path, kwargs, match):
    with pytest.raises(CompatibilityError, match=match):
        check_model_fits(dataset(tmp_path, **kwargs), MODEL)


def test_another_tokenizer_than_the_models_is_refused(tmp_path):
    trained_on = tokenizer_identity(dataset(tmp_path / "a"))
    other = dataset(tmp_path / "b", tokenizer_bytes=b"tokenizer B")
    with pytest.raises(CompatibilityError, match="tokenizer sha256 .* differs"):
        check_model_fits(other, MODEL, tokenizer=trained_on)


def test_segments_needed_but_absent_is_refused(tmp_path):
    with pytest.raises(CompatibilityError, match="--use_segments"):
        check_model_fits(dataset(tmp_path), dataclasses.replace(MODEL, use_segments=True))
    check_model_fits(
        dataset(tmp_path / "s", with_segments=True), dataclasses.replace(MODEL, use_segments=True)
    )


def test_train_and_eval_must_share_tokenization(tmp_path):
    train = dataset(tmp_path / "train")
    check_same_tokenization(train, dataset(tmp_path / "same"))
    with pytest.raises(CompatibilityError, match="does not match"):
        check_same_tokenization(train, dataset(tmp_path / "other", tokenizer_bytes=b"tokenizer B"))
    with pytest.raises(CompatibilityError, match="does not match"):
        check_same_tokenization(train, dataset(tmp_path / "longer", seq_len=16))


def test_a_replaced_tokenizer_file_is_refused(tmp_path):
    data = dataset(tmp_path)
    with open(data.tokenizer_path, "wb") as handle:
        handle.write(b"tampered")
    with pytest.raises(CompatibilityError, match="has sha256"):
        verify_tokenizer_file(data)
    os.remove(data.tokenizer_path)
    with pytest.raises(CompatibilityError, match="is missing"):
        verify_tokenizer_file(data)
