import io
import random

import fsspec
import numpy as np
import pytest
import sentencepiece as spm

import tokenizer.encoder as encoder_module
from tokenizer.boundaries import BoundaryRules
from tokenizer.encoder import (
    LOSSLESS_PROBES,
    CachedEncoder,
    check_lossless,
    load_model_bytes,
    processor_from_bytes,
)
from tokenizer.spec import FIXED_TRAINER_KWARGS, KNOWN_LOSSY_CHARS

from .conftest import stdlib_texts

TRICKY = [
    "",
    " ",
    "  ",
    " " * 100,
    " " * 100 + "x",
    "x" + " " * 100,
    "\t",
    "\t\t\tindented\twith\ttabs\t",
    "\n",
    "\n\n\n",
    "\r",
    "\r\n",
    "windows\r\nline\r\nends\r\n",
    "  leading",
    "trailing  ",
    "a  b   c    d",
    " \n \n  \n",
    "def f(x):\n    return x  # c\n\n\n    \n",
    "0",
    "0123456789",
    "  1",
    "1  ",
    "a1b2c3 x9 99 bottles",
    "3.14159 1,000,000 2e-10 0x1F",
    "\x00",
    "\x00\x00\x00",
    "a\x00b",
    " \x00 ",
    "  \x00x",
    "\u2581",
    "a\u2581b",
    "\u2581\u2581 \u2581x",
    " \u2581 \u2581",
    "ﬁ ﬂ Ａ１ ｶ Ⅷ ½",
    "e\u0301 é n\u0303",
    "\u200b\ufeff\u00a0\u2028\u3000",
    "😀👍🏽 👨‍👩‍👧 🇩🇪",
    "中文字符 日本語のテキスト 한국어",
    "Ελληνικά русский עברית العربية हिन्दी ไทย",
    "mixed中文and English😀with emoji",
    "x" * 10_000,
    "y" * 65,
    "https://example.com/" + "a1B2c3D4e5" * 300,
    " ".join(["supercalifragilistic"] * 50),
    "\U0010ffff\U0001f600",
]
_PARTS = [
    "a",
    "b",
    "the",
    "def",
    "self",
    "_",
    "(",
    ")",
    ":",
    ".",
    " ",
    "  ",
    "    ",
    "\t",
    "\n",
    "\r\n",
    "\u2581",
    "\x00",
    "0",
    "7",
    "42",
    "中",
    "文",
    "😀",
    "é",
    "e\u0301",
    "ﬁ",
    "Ａ",
]


def fuzz_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(_PARTS, k=rng.randrange(0, 80))) for _ in range(count)]


@pytest.fixture(scope="module")
def held_out_code() -> list[str]:
    """Stdlib sources the model did not see (conftest trains on the first files)."""
    return stdlib_texts(skip=60, max_chars=600_000)


def encode_all(encoder, texts, batch_size):
    return [
        ids
        for i in range(0, len(texts), batch_size)
        for ids in encoder.encode_batch(texts[i : i + batch_size])
    ]


def assert_same_as_processor(encoder, texts, batch_size=16):
    got = encode_all(encoder, texts, batch_size)
    want = [encoder.processor.encode(text) for text in texts]
    assert len(got) == len(texts)
    for text, ids, expected in zip(texts, got, want):
        assert ids.tolist() == expected, f"mismatch for {text[:80]!r}"


def test_lossless_model_uses_the_word_cache(model_bytes):
    assert CachedEncoder(model_proto=model_bytes).fallback_reason == ""


def test_same_ids_as_processor_on_code(model_bytes, held_out_code, training_texts):
    encoder = CachedEncoder(model_proto=model_bytes, num_threads=2)
    assert_same_as_processor(encoder, held_out_code + training_texts[-200:])
    assert 0 < encoder.words_encoded < encoder.words_seen


def test_same_ids_as_processor_on_tricky_and_random_strings(model_bytes):
    encoder = CachedEncoder(model_proto=model_bytes)
    texts = TRICKY + fuzz_texts(500, seed=0)
    assert_same_as_processor(encoder, texts, batch_size=7)
    assert_same_as_processor(encoder, texts, batch_size=len(texts))  # now from the cache


def test_same_ids_with_a_tiny_cache_and_short_cached_words(model_bytes, held_out_code):
    encoder = CachedEncoder(model_proto=model_bytes, max_cache_entries=50, max_cached_word_chars=3)
    texts = TRICKY + fuzz_texts(100, seed=1) + held_out_code[:5]
    for _ in range(2):
        assert_same_as_processor(encoder, texts, batch_size=5)
        assert encoder.num_cached_words <= 50


def test_same_ids_without_digit_and_nul_boundaries(model_bytes, monkeypatch):
    # The path taken when a vocabulary has pieces spanning digits or NUL: words one by one.
    monkeypatch.setattr(
        encoder_module,
        "boundary_rules",
        lambda pieces: BoundaryRules(spaces=True, digits=False, nul=False),
    )
    encoder = CachedEncoder(model_proto=model_bytes)
    assert encoder.fallback_reason == ""
    assert_same_as_processor(encoder, TRICKY + fuzz_texts(200, seed=2))


def test_second_pass_is_served_from_the_cache(model_bytes):
    encoder = CachedEncoder(model_proto=model_bytes)
    texts = fuzz_texts(50, seed=3)
    first = encoder.encode_batch(texts)
    encoded = encoder.words_encoded
    second = encoder.encode_batch(texts)
    assert encoder.words_encoded == encoded
    assert [a.tolist() for a in first] == [b.tolist() for b in second]


def test_output_is_one_int32_array_per_text(model_bytes):
    encoder = CachedEncoder(model_proto=model_bytes)
    assert encoder.encode_batch([]) == []
    out = encoder.encode_batch(["", "hello world", ""])
    assert len(out) == 3
    assert all(isinstance(a, np.ndarray) and a.dtype == np.int32 and a.ndim == 1 for a in out)
    assert out[0].size == 0 and out[2].size == 0 and out[1].size > 0
    assert [a.tolist() for a in encoder.encode_batch(["", ""])] == [[], []]


def test_round_trip_is_lossless(model_bytes, held_out_code):
    encoder = CachedEncoder(model_proto=model_bytes)
    texts = TRICKY + fuzz_texts(300, seed=4) + held_out_code[:10]
    for text, ids in zip(texts, encode_all(encoder, texts, 32)):
        expected = text
        for char in KNOWN_LOSSY_CHARS:  # SentencePiece's own space symbol decodes to " "
            expected = expected.replace(char, " ")
        assert encoder.processor.decode(ids.tolist()) == expected


def test_check_lossless(processor, default_unigram_bytes, default_bpe_bytes):
    assert "\u2581" not in "".join(LOSSLESS_PROBES)
    assert check_lossless(processor)
    assert not check_lossless(processor_from_bytes(default_unigram_bytes))
    assert not check_lossless(processor_from_bytes(default_bpe_bytes))


@pytest.mark.parametrize("model", ["default_unigram_bytes", "default_bpe_bytes"])
def test_default_options_fall_back_to_processor_encode(model, request, held_out_code):
    encoder = CachedEncoder(model_proto=request.getfixturevalue(model))
    assert encoder.fallback_reason
    assert_same_as_processor(encoder, TRICKY + fuzz_texts(100, seed=5) + held_out_code[:5])


def test_vocabulary_spanning_spaces_falls_back(training_texts):
    writer = io.BytesIO()
    kwargs = {**FIXED_TRAINER_KWARGS, "split_by_whitespace": False, "model_type": "bpe"}
    lines = [line for text in training_texts[:20] for line in text.splitlines()]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=writer, vocab_size=600, minloglevel=2, **kwargs
    )
    encoder = CachedEncoder(model_proto=writer.getvalue())
    assert "'▁' after another character" in encoder.fallback_reason
    assert_same_as_processor(encoder, TRICKY + fuzz_texts(100, seed=6))


def test_invalid_unicode_raises_like_sentencepiece(model_bytes):
    encoder = CachedEncoder(model_proto=model_bytes)
    with pytest.raises((TypeError, RuntimeError, UnicodeError)):
        encoder.encode_batch(["fine", "lone \ud800 surrogate"])
    assert_same_as_processor(encoder, ["fine", "lone surrogate"])  # state still consistent


def test_load_model_bytes_from_a_url(model_bytes):
    with fsspec.open("memory://encoder-test/tokenizer.model", "wb") as handle:
        handle.write(model_bytes)
    assert load_model_bytes("memory://encoder-test/tokenizer.model") == model_bytes


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_threads": -1}, "num_threads=-1"),
        ({"max_cache_entries": 0}, "max_cache_entries=0"),
        ({"max_cached_word_chars": 0}, "max_cached_word_chars=0"),
    ],
)
def test_bad_arguments(model_bytes, kwargs, message):
    with pytest.raises(ValueError, match=message):
        CachedEncoder(model_proto=model_bytes, **kwargs)
