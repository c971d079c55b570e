"""Load a SentencePiece model and encode batches of documents fast: ``CachedEncoder``.

``CachedEncoder.encode_batch`` returns exactly ``processor.encode(text)`` for every text, faster:
it splits texts into words at boundaries no vocabulary piece spans (``tokenizer.boundaries``),
looks the words up in a cache (natural text and code repeat their words constantly), and
encodes only the words it has not seen, all of a batch in one multi-threaded SentencePiece
call. Each condition that makes this exact is checked on the model when the encoder is built;
if one fails, the encoder says why (``fallback_reason``) and calls ``processor.encode``.
"""

from __future__ import annotations

import os
from itertools import chain, repeat

import fsspec
import numpy as np
import sentencepiece as spm

from common.errors import ConfigError
from tokenizer.boundaries import BoundaryRules, boundary_rules, word_pattern
from tokenizer.id_store import TOKEN_DTYPE, IdStore
from tokenizer.model_proto import read_model_facts
from tokenizer.spec import SPACE_SYMBOL

# Strings the default SentencePiece options would not round-trip: edge spaces and runs of them,
# tabs, CR/LF, NFKC-sensitive characters (ligature, full width, combining, compatibility), NUL,
# zero-width and other invisible characters, emoji with modifiers, several scripts, digits.
LOSSLESS_PROBES = (
    "",
    " ",
    "   ",
    "  leading",
    "trailing  ",
    "a  b   c",
    "\t",
    "\tx\t\ty\t",
    "\n",
    "a\nb\n\n\n",
    " \n \n",
    "\r\n",
    "line\r\nnext\r",
    "ﬁ ﬂ",
    "Ａ１",
    "e\u0301 é",
    "Ⅷ ½ ㎏ ｶ",
    "\x00",
    "a\x00b",
    "\u200b\ufeff\u00a0\u2028\u3000",
    "😀 👍🏽 👨‍👩‍👧",
    "中文字符 日本語のテキスト 한국어",
    "Ελληνικά русский עברית العربية हिन्दी",
    "0123456789 3.14159 1,000,000",
    "def f(x):\n    return x  # done\n\n\tpass\n",
)
_GROUP_CHARS = 1024  # SentencePiece BPE slows down on long inputs; words go in small groups
_NUL = "\x00"


def load_model_bytes(path: str) -> bytes:
    """Read a serialized model from a local path or an fsspec URL (``s3://...``)."""
    with fsspec.open(path, "rb") as handle:
        return handle.read()


def processor_from_bytes(model_bytes: bytes) -> spm.SentencePieceProcessor:
    """A SentencePiece processor for a serialized model, with default encode options."""
    return spm.SentencePieceProcessor(model_proto=model_bytes)


def usable_cores() -> int:
    # Cores this process may run on; SentencePiece's own default counts every host core.
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_lossless(processor: spm.SentencePieceProcessor) -> bool:
    """Whether every string of ``LOSSLESS_PROBES`` survives ``decode(encode(probe))``."""
    return all(processor.decode(processor.encode(probe)) == probe for probe in LOSSLESS_PROBES)


def _matchable_pieces(processor: spm.SentencePieceProcessor) -> list[str]:
    """Pieces input text can be matched against: not byte, control or unknown pieces."""
    return [
        processor.id_to_piece(i)
        for i in range(processor.get_piece_size())
        if not (processor.is_byte(i) or processor.is_control(i) or processor.is_unknown(i))
    ]


def plan_fast_path(
    processor: spm.SentencePieceProcessor, model_proto: bytes
) -> tuple[BoundaryRules | None, str]:
    """The safe word boundaries of a model, or None and why the word cache would be inexact.

    Checks the serialized options (BPE, byte fallback, identity normalizer without dummy
    prefix or whitespace folding), the behaviour (round trips, ``normalize`` only escapes
    spaces) and the vocabulary (no piece spans a space boundary).
    """
    facts = read_model_facts(model_proto)
    if facts.model_type != "bpe":
        return None, f"model_type is {facts.model_type}; the word cache is exact for bpe only"
    if not facts.byte_fallback:
        return None, "byte_fallback is off; unknown characters could merge across words"
    if (
        facts.precompiled_charsmap_size
        or facts.add_dummy_prefix
        or facts.remove_extra_whitespaces
        or not facts.escape_whitespaces
        or facts.treat_whitespace_as_suffix
    ):
        return None, f"the normalizer rewrites text ({facts}); train with tokenizer.spec options"
    if not check_lossless(processor):
        return None, "the model does not round-trip tokenizer.encoder.LOSSLESS_PROBES"
    for probe in LOSSLESS_PROBES:
        if processor.normalize(probe) != probe.replace(" ", SPACE_SYMBOL):
            return None, f"normalize({probe!r}) does more than escape spaces"
    rules = boundary_rules(_matchable_pieces(processor))
    if not rules.spaces:
        return None, "a piece has '▁' after another character; words are not independent"
    if rules.nul:
        (nul_id, *rest) = processor.encode(_NUL) or [None]
        if rest or nul_id is None or not processor.is_byte(nul_id):
            rules = BoundaryRules(spaces=True, digits=rules.digits, nul=False)
    return rules, ""


class CachedEncoder:
    """Encodes batches of texts exactly like ``processor.encode``, caching the ids of words.

    Not thread-safe: give each worker (e.g. each Beam ``DoFn`` instance, in ``setup()``) its own.

    Attributes:
      fallback_reason: Empty when the word cache is in use, else why every batch goes to
        ``processor.encode`` unchanged.
      words_seen: Words looked up so far.
      words_encoded: Of those, the ones not in the cache (each distinct one of a batch is
        encoded once): ``words_encoded / words_seen`` is the miss rate.
    """

    def __init__(
        self,
        *,
        model_proto: bytes,
        num_threads: int = 0,
        max_cache_entries: int = 1_000_000,
        max_cached_word_chars: int = 64,
    ):
        """Builds the processor and checks the model.

        Args:
          model_proto: A serialized SentencePiece model (``load_model_bytes``).
          num_threads: SentencePiece threads for the words a batch has not seen; 0 = one per
            CPU core this process may use.
          max_cache_entries: Words kept; when full, the cache starts over empty. An entry
            costs about 190 bytes, so the default holds about 190 MB when full.
          max_cached_word_chars: Longer words (base64, minified code) are encoded but not
            cached: they rarely repeat and would fill the cache.
        """
        if num_threads < 0:
            raise ConfigError(f"num_threads={num_threads} must be 0 (all cores) or positive")
        if max_cache_entries < 1:
            raise ConfigError(f"max_cache_entries={max_cache_entries} must be positive")
        if max_cached_word_chars < 1:
            raise ConfigError(f"max_cached_word_chars={max_cached_word_chars} must be positive")
        self._processor = processor_from_bytes(model_proto)
        self._threads = num_threads or usable_cores()
        self._max_entries = max_cache_entries
        self._max_word_chars = max_cached_word_chars
        self._rules, self.fallback_reason = plan_fast_path(self._processor, model_proto)
        self.words_seen = 0
        self.words_encoded = 0
        if self._rules is not None:
            flags = {"digits": self._rules.digits, "nul": self._rules.nul}
            self._findall = word_pattern(**flags, space_symbol=False).findall
            self._findall_meta = word_pattern(**flags, space_symbol=True).findall
            if self._rules.nul:
                self._nul_id = self._processor.encode(_NUL)[0]
            self._reset()

    @property
    def processor(self) -> spm.SentencePieceProcessor:
        return self._processor

    @property
    def num_cached_words(self) -> int:
        return len(self._cache) if self._rules is not None else 0

    def _reset(self) -> None:
        self._cache: dict[str, int] = {}
        self._store = IdStore()
        if self._rules.nul:
            # NUL separates words in _encode_words, so the word "\x00" must never miss.
            self._cache[_NUL] = self._store.append(
                np.array([self._nul_id], dtype=TOKEN_DTYPE), np.array([1])
            )

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        """Token ids of each text: ``list(out[i]) == processor.encode(texts[i])`` for all i.

        Args:
          texts: Documents; any length. Strings that are not valid Unicode (lone surrogates)
            raise, as they do in SentencePiece.

        Returns:
          One int32 array per text (views into one buffer per batch).
        """
        if self._rules is None:
            encoded = self._processor.encode(list(texts), num_threads=self._threads)
            return [np.array(ids, dtype=TOKEN_DTYPE) for ids in encoded]
        if not texts:
            return []
        if len(self._cache) >= self._max_entries:
            self._reset()
        findall, findall_meta = self._findall, self._findall_meta
        words_per_text = [
            findall_meta(text) if SPACE_SYMBOL in text else findall(text) for text in texts
        ]
        words = list(chain.from_iterable(words_per_text))
        index = np.fromiter(map(self._cache.get, words, repeat(-1)), np.int64, len(words))
        missing = np.flatnonzero(index < 0)
        self.words_seen += len(words)
        self.words_encoded += len(missing)
        if len(missing):
            index[missing] = self._add_words([words[i] for i in missing.tolist()])
        ids, word_ends = self._store.gather(index)
        self._store.truncate(len(self._cache))  # drop this batch's uncached words
        # Token offset where each text ends: the end of its last word.
        text_word_ends = np.cumsum(np.fromiter(map(len, words_per_text), np.int64, len(texts)))
        text_ends = np.concatenate(([0], word_ends))[text_word_ends]
        return np.split(ids, text_ends[:-1])

    def _add_words(self, missing: list[str]) -> np.ndarray:
        """Encode the distinct ``missing`` words, store them, return their store indices."""
        unique = list(dict.fromkeys(missing))  # first-seen order
        room = self._max_entries - len(self._cache)
        if len(unique) <= room and max(map(len, unique)) <= self._max_word_chars:
            num_cacheable = len(unique)  # the common case, without a Python-level loop
        else:
            cacheable = [word for word in unique if len(word) <= self._max_word_chars][:room]
            kept = set(cacheable)
            unique = cacheable + [word for word in unique if word not in kept]
            num_cacheable = len(cacheable)
        # Cacheable words first, so that truncating the store drops exactly the others.
        ids, lengths = self._encode_words(unique)
        first = self._store.append(ids, lengths)
        position = dict(zip(unique, range(first, first + len(unique))))
        if num_cacheable == len(unique):
            self._cache.update(position)
        else:
            self._cache.update(zip(unique[:num_cacheable], range(first, first + num_cacheable)))
        return np.fromiter(map(position.__getitem__, missing), np.int64, len(missing))

    def _encode_words(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated ids of ``words`` and the number of ids of each."""
        if not self._rules.nul:
            arrays = self._encode_arrays(words)
            return np.concatenate(arrays), np.fromiter(map(len, arrays), np.int64, len(arrays))
        # NUL is a safe boundary and never part of a word here, so "w1\0w2\0w3" encodes as the
        # ids of w1, <0x00>, ids of w2, ...: one short string per group instead of per word.
        joined = _NUL.join(words)
        groups, start = [], 0
        while (cut := joined.find(_NUL, start + _GROUP_CHARS)) >= 0:
            groups.append(joined[start:cut])
            start = cut + 1
        groups.append(joined[start:])
        separator = np.array([self._nul_id], dtype=TOKEN_DTYPE)
        parts = [separator] * (2 * len(groups) - 1)
        parts[::2] = self._encode_arrays(groups)
        ids = np.concatenate(parts)
        is_separator = ids == self._nul_id
        bounds = np.concatenate(([-1], np.flatnonzero(is_separator), [len(ids)]))
        lengths = np.diff(bounds) - 1
        assert len(lengths) == len(words), "a word contained NUL"  # the word regex splits NUL
        return ids[~is_separator], lengths

    def _encode_arrays(self, texts: list[str]) -> list[np.ndarray]:
        return self._processor.encode(texts, num_threads=self._threads, out_type="numpy")
