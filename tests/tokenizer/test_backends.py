"""tokenizer/backends: the fast backend equals SentencePiece on adversarial text, every backend
returns the documented (lossless) encoding, and auto says why it falls back."""

import json

import numpy as np
import pytest

from common.errors import ConfigError
from tokenizer.backends import (
    GigatokenBackend,
    SentencePieceBackend,
    documented_encode,
    open_backend,
    space_symbol_ids,
)
from tokenizer.backends.base import SPACE_SYMBOL_PIECES
from tokenizer.backends.gigatoken_backend import tokenizer_json

from .conftest import stdlib_texts

# Control pieces' texts in code, U+2581 runs, NUL, CRLF, emoji, long words and whitespace runs,
# characters outside the vocabulary (byte fallback), byte-piece look-alikes.
ADVERSARIAL = [
    "</s>", "<s>", "<pad>", "<unk>", "x = '</s>' if eos else '<pad>'  # <s> <unk>",
    "html: <s>struck</s> and <pad/>", "<0x41><0xE2><0x96><0x81>", "<|endoftext|>",
    "\x00", "a\x00b\x00\x00c", "\r\n", "one\r\ntwo\r\n\r\n", "\r", "\t\t\tx\t",
    "😀 👍🏽 👨‍👩‍👧 🇩🇪", "\U0010ffff\U000e0001\u0378", "中文字符 日本語のテキスト 한국어",
    "supercalifragilisticexpialidocious" * 40, "x" * 5000, " " * 2000, " " * 300 + "y",
    "\n" * 100, "\u200b\ufeff\u00a0\u2028\u3000", "\ufeff{\"text\": 1}", "ﬁ Ａ１ e\u0301",
    "0123456789" * 20, "", " ", "  leading", "trailing  ",
]
WITH_SPACE_SYMBOL = ["\u2581", "a\u2581b", "\u2581\u2581\u2581", " \u2581 x\u2581",
                     "x\u2581 </s>\u2581", "\u2581" * 50 + "end", "def f():\u2581\u2581return 1"]


@pytest.fixture(scope="module")
def giga(model_bytes, processor):
    return GigatokenBackend(model_proto=model_bytes, processor=processor)


def _lists(arrays):
    return [a.tolist() for a in arrays]


def test_gigatoken_equals_sentencepiece_on_adversarial_and_held_out_text(giga, processor):
    held_out = stdlib_texts(skip=150, max_chars=300_000)  # code the model was not trained on
    texts = ADVERSARIAL + held_out
    assert _lists(giga.encode_batch(texts)) == [processor.encode(t) for t in texts]
    assert all(ids.dtype == np.int32 for ids in giga.encode_batch(ADVERSARIAL))


def test_gigatoken_as_its_library_ships_it_matches_control_pieces_in_text(model_bytes, giga,
                                                                          processor):
    """Why tokenizer_json exists: gigatoken's own converter makes '</s>' one token."""
    import gigatoken

    shipped = gigatoken.Tokenizer.from_sentencepiece(model_bytes)
    assert shipped.encode("a </s> b").tolist() != processor.encode("a </s> b")
    assert giga.encode_batch(["a </s> b"])[0].tolist() == processor.encode("a </s> b")
    assert "</s>" not in tokenizer_json(processor).split('"added_tokens": [')[1][:20]


def test_gigatoken_splits_a_batch_over_threads_without_changing_ids(model_bytes, processor):
    texts = ADVERSARIAL + stdlib_texts(skip=150, max_chars=100_000)
    threaded = GigatokenBackend(model_proto=model_bytes, processor=processor, num_threads=3)
    assert _lists(threaded.encode_batch(texts)) == [processor.encode(t) for t in texts]


def test_gigatoken_gil_free_batch_call_gives_the_same_ids(model_bytes, processor):
    """The batch call (without the GIL; its speed is in BENCHMARKS.md) against the library."""
    texts = ADVERSARIAL + WITH_SPACE_SYMBOL + stdlib_texts(skip=150, max_chars=300_000)
    free = GigatokenBackend(model_proto=model_bytes, processor=processor, gil_free=True)
    expected = [documented_encode(processor, t) for t in texts]
    assert _lists(free.encode_batch(texts)) == expected
    assert _lists(free.encode_batch(texts[:1])) == expected[:1]
    assert free.encode_batch([]) == []
    assert all(ids.dtype == np.int32 for ids in free.encode_batch(ADVERSARIAL))


# Words as SentencePiece splits them, each seen several times across calls: leading and
# repeated spaces, digits, scripts, long words, words seen first inside a longer run.
WORDS_AGAIN = [
    " leading", "  two leading", "trailing ", "a  b   c", "3.14159 2024 1,000,000 0x7f",
    "ünïcödé naïve café 中文 日本語 한국어 Ελληνικά русский", "e\u0301 ﬁ Ａ１ 😀👍🏽",
    "supercalifragilisticexpialidocious " * 30, "y" * 3000, "tab\tand\nnew\r\nline",
    "the the the the", "thethe the_the the-the", "x = f(a, b)  # the",
]


def test_gigatoken_word_cache_across_calls_is_exact_and_bounded(model_bytes, processor):
    """The per-text call keeps its word cache from call to call (text seen before costs less)
    and drops it every ``cache_chars`` characters; ids never change, cold or warm."""
    budget = 20_000
    texts = WORDS_AGAIN + ADVERSARIAL + stdlib_texts(skip=150, max_chars=150_000)
    backend = GigatokenBackend(model_proto=model_bytes, processor=processor, cache_chars=budget)
    assert not backend._gil_free and backend._pool is None  # the per-text call
    expected = [documented_encode(processor, t) for t in texts]
    loaded = backend._tokenizer
    for rep in range(3):  # the same texts again, in calls of different sizes
        size = 1 + 7 * rep
        got = [ids for i in range(0, len(texts), size)
               for ids in _lists(backend.encode_batch(texts[i:i + size]))]
        assert got == expected
        assert backend._cached_chars < budget + max(map(len, texts))
    assert backend.cache_drops >= 3 * sum(map(len, texts)) // (budget + max(map(len, texts)))
    assert backend._tokenizer is not loaded  # reloaded: the old cache is garbage
    unbounded = GigatokenBackend(model_proto=model_bytes, processor=processor)
    assert _lists(unbounded.encode_batch(texts)) == expected
    assert unbounded.cache_drops == 0
    with pytest.raises(ConfigError, match="cache_chars=0 must be positive"):
        GigatokenBackend(model_proto=model_bytes, processor=processor, cache_chars=0)


def test_gigatoken_per_text_call_from_several_threads(model_bytes, processor):
    """Encoder threads share one backend: its per-text calls (and cache drops) take turns."""
    from concurrent.futures import ThreadPoolExecutor

    texts = WORDS_AGAIN + ADVERSARIAL + stdlib_texts(skip=150, max_chars=100_000)
    backend = GigatokenBackend(model_proto=model_bytes, processor=processor, cache_chars=5_000)
    chunks = [texts[i:i + 3] for i in range(0, len(texts), 3)] * 3
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda chunk: _lists(backend.encode_batch(chunk)), chunks))
    assert got == [[documented_encode(processor, t) for t in chunk] for chunk in chunks]
    assert backend.cache_drops > 0


@pytest.mark.parametrize("word_cache", [True, False])
def test_sentencepiece_backend_is_the_library(model_bytes, processor, word_cache):
    backend = SentencePieceBackend(model_proto=model_bytes, word_cache=word_cache)
    assert _lists(backend.encode_batch(ADVERSARIAL)) == [processor.encode(t) for t in ADVERSARIAL]


def test_u2581_becomes_its_byte_pieces_and_decodes_back(model_bytes, processor, giga):
    space_ids = space_symbol_ids(processor).tolist()
    assert [processor.id_to_piece(i) for i in space_ids] == list(SPACE_SYMBOL_PIECES)
    # "a▁b" is "a", the three byte pieces, "b"; plain SentencePiece would read "a b".
    assert documented_encode(processor, "a\u2581b") == (
        processor.encode("a") + space_ids + processor.encode("b"))
    assert processor.decode(processor.encode("a\u2581b")) == "a b"  # the loss this removes
    texts = WITH_SPACE_SYMBOL + ADVERSARIAL[:6]
    expected = [documented_encode(processor, t) for t in texts]
    for backend in (giga, SentencePieceBackend(model_proto=model_bytes)):
        got = _lists(backend.encode_batch(texts))
        assert got == expected
        assert [processor.decode(ids) for ids in got] == texts  # lossless, every one


def test_auto_picks_gigatoken_for_this_projects_models(model_bytes):
    opened = open_backend("auto", model_proto=model_bytes)
    assert (opened.backend.name, opened.reason) == ("gigatoken", "")
    assert opened.backend.releases_gil


def test_auto_falls_back_to_sentencepiece_and_says_why(default_bpe_bytes, default_unigram_bytes):
    bpe = open_backend("auto", model_proto=default_bpe_bytes)
    assert bpe.backend.name == "sentencepiece"
    assert bpe.reason == "gigatoken: byte_fallback is off; gigatoken needs byte fallback"
    unigram = open_backend("auto", model_proto=default_unigram_bytes)
    assert unigram.backend.name == "sentencepiece"
    assert "model_type is unigram" in unigram.reason
    with pytest.raises(ConfigError, match="--encoder=gigatoken cannot encode this model: model_"):
        open_backend("gigatoken", model_proto=default_unigram_bytes)
    with pytest.raises(ConfigError, match="--encoder='fast' is not one of auto, gigatoken"):
        open_backend("fast", model_proto=default_unigram_bytes)


def test_reference_cuts_long_texts_without_changing_ids(model_bytes, processor):
    # The guard's reference encodes long documents in pieces cut at space-word boundaries;
    # the ids must be processor.encode's of the whole text.
    from tokenizer.backends import reference_backend

    texts = stdlib_texts(skip=40, max_chars=400_000)
    texts += ["x" * 50_000 + " tail", "  " + "word " * 20_000, "a\u2581 b " * 9_000]
    cut = SentencePieceBackend(model_proto=model_bytes, word_cache=False, cut_bytes=4096)
    assert cut._cut_bytes == 4096
    for ids, text in zip(cut.encode_batch(texts), texts):
        assert ids.tolist() == documented_encode(processor, text)
    assert reference_backend(model_proto=model_bytes)._cut_bytes > 0


def test_converted_model_is_cached_and_a_damaged_cache_is_ignored(model_bytes, processor,
                                                                    tmp_path, monkeypatch):
    from tokenizer.backends import gigatoken_backend

    monkeypatch.setenv("PILEPACK_CACHE_DIR", str(tmp_path))
    fresh = GigatokenBackend(model_proto=model_bytes, processor=processor)
    (path,) = (tmp_path / "gigatoken").iterdir()
    assert json.loads(path.read_text())["definition"] == tokenizer_json(processor)
    cached = GigatokenBackend(model_proto=model_bytes, processor=processor)
    assert _lists(cached.encode_batch(ADVERSARIAL)) == _lists(fresh.encode_batch(ADVERSARIAL))
    path.write_text('{"reason": "", "defin')  # cut short: converted again, and rewritten
    again = GigatokenBackend(model_proto=model_bytes, processor=processor)
    assert _lists(again.encode_batch(ADVERSARIAL)) == _lists(fresh.encode_batch(ADVERSARIAL))
    assert json.loads(path.read_text())["definition"] == tokenizer_json(processor)
    monkeypatch.setenv("PILEPACK_CACHE_DIR", str(path))  # a file: the cache cannot be written
    GigatokenBackend(model_proto=model_bytes, processor=processor)
    assert gigatoken_backend.cache_directory().startswith(str(path))
