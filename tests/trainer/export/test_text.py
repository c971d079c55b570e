"""trainer/export/text.py: tf-text gives the sentencepiece library's ids and text, on every
document of the built-in sample, with a tokenizer trained on it."""

import pytest
import sentencepiece as spm
import tensorflow as tf

from common.errors import InputError
from tokenizer.spec import KNOWN_LOSSY_CHARS
from trainer.export.text import sentencepiece_tokenizer

EDGES = [
    "",
    " ",
    "  two leading",
    "a  b\t\tc\r\n",
    "nul\x00byte",
    "héllo 😀 日本",
    "0123",
    "\n    x",
]


def test_ids_and_text_equal_the_sentencepiece_library(sample_documents, tokenizer_proto):
    texts = [text for docs in sample_documents.values() for text in docs] + EDGES
    assert len(texts) > 600
    reference = spm.SentencePieceProcessor(model_proto=tokenizer_proto)
    expected = reference.encode(texts)
    tokenizer = sentencepiece_tokenizer(tokenizer_proto)

    ids = tokenizer.tokenize(tf.constant(texts))
    assert ids.to_list() == expected
    decoded = [d.decode("utf-8") for d in tokenizer.detokenize(ids).numpy()]
    assert decoded == reference.decode(expected)
    for text, back in zip(texts, decoded):
        for char in KNOWN_LOSSY_CHARS:  # decodes to a space in any SentencePiece model
            text = text.replace(char, " ")
        assert back == text


def test_bytes_that_are_not_a_model_are_an_input_error():
    with pytest.raises(InputError, match="not a SentencePiece model"):
        sentencepiece_tokenizer(b"not a model")
