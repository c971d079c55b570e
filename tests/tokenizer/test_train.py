import hashlib
import os

import fsspec
import pytest

from tokenizer.encoder import load_model_bytes, processor_from_bytes
from tokenizer.model_info import fingerprint
from tokenizer.spec import MODEL_FILENAME, VOCAB_FILENAME, TrainOptions
from tokenizer.train import train_from_texts

from .conftest import TEST_VOCAB_SIZE


def test_writes_model_and_vocab(trained, training_texts):
    assert os.path.basename(trained.model_path) == MODEL_FILENAME
    assert os.path.basename(trained.vocab_path) == VOCAB_FILENAME
    with open(trained.model_path, "rb") as handle:
        model = handle.read()
    with open(trained.vocab_path, encoding="utf-8") as handle:
        assert handle.read().startswith("<pad>\t0\n</s>\t0\n<unk>\t0\n<s>\t0\n<0x00>\t0\n")
    assert trained.sha256 == fingerprint(model) == hashlib.sha256(model).hexdigest()
    assert trained.vocab_size == processor_from_bytes(model).vocab_size() == TEST_VOCAB_SIZE
    assert trained.num_texts == len(training_texts)
    assert trained.num_bytes == sum(len(t.encode("utf-8")) for t in training_texts)
    assert trained.train_seconds > 0
    assert not [n for n in os.listdir(os.path.dirname(trained.model_path)) if "inprogress" in n]


def test_same_texts_give_the_same_model(tmp_path, training_texts):
    options = TrainOptions(vocab_size=400)
    first = train_from_texts(
        texts=training_texts[:5], output_dir=str(tmp_path / "a"), options=options
    )
    again = train_from_texts(
        texts=training_texts[:5], output_dir=str(tmp_path / "b"), options=options
    )
    assert first.sha256 == again.sha256


def test_fingerprint_is_sha256_hex():
    assert fingerprint(b"") == hashlib.sha256(b"").hexdigest()


def test_vocab_size_above_what_the_corpus_supports_gives_the_real_size(tmp_path):
    texts = ["the cat sat on the mat " * 20, "a dog"]
    result = train_from_texts(
        texts=texts, output_dir=str(tmp_path), options=TrainOptions(vocab_size=5000)
    )
    assert 261 < result.vocab_size < 5000


def test_texts_longer_than_max_sentence_length_are_cut_not_skipped(tmp_path):
    # SentencePiece silently drops sentences over max_sentence_length; one long text would
    # leave it nothing to train on.
    text = " ".join(f"word{i % 50} alpha beta" for i in range(2000))
    options = TrainOptions(vocab_size=300, max_sentence_length=256)
    result = train_from_texts(texts=[text], output_dir=str(tmp_path), options=options)
    processor = processor_from_bytes(load_model_bytes(result.model_path))
    assert processor.decode(processor.encode(text)) == text


def test_writes_to_an_fsspec_url(training_texts):
    url = "memory://tokenizer-test/out"
    result = train_from_texts(
        texts=training_texts[:5], output_dir=url, options=TrainOptions(vocab_size=400)
    )
    assert result.model_path == url + "/" + MODEL_FILENAME
    fs = fsspec.filesystem("memory")
    assert fs.exists("/tokenizer-test/out/" + VOCAB_FILENAME)
    assert fingerprint(load_model_bytes(result.model_path)) == result.sha256


def test_too_small_vocab_names_the_fix(tmp_path):
    texts = ["".join(chr(0x4E00 + i) for i in range(400)) + " abc"]  # 400 distinct characters
    options = TrainOptions(vocab_size=300, character_coverage=1.0)
    with pytest.raises(ValueError, match=r"raise --vocab_size to at least \d+"):
        train_from_texts(texts=texts, output_dir=str(tmp_path), options=options)


def test_empty_corpus_names_the_fix(tmp_path):
    with pytest.raises(ValueError, match="no training text"):
        train_from_texts(texts=["", ""], output_dir=str(tmp_path), options=TrainOptions())


def test_errors_from_the_texts_pass_through_unchanged(tmp_path):
    def texts():
        yield "some text"
        raise KeyError("corrupt file 3")

    with pytest.raises(KeyError, match="corrupt file 3"):
        train_from_texts(texts=texts(), output_dir=str(tmp_path), options=TrainOptions())
    with pytest.raises(TypeError, match="decode it first"):
        train_from_texts(texts=[b"bytes"], output_dir=str(tmp_path), options=TrainOptions())
