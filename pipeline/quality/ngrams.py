"""Word n-grams of normalized text for decontamination (``--decontaminate``): their hashes,
which of a document's match an evaluation set, and the character spans they cover.

Normalization (``NORMALIZATION``) is GPT-3's (Brown et al. 2020, "Language Models are
Few-Shot Learners", Appendix C: a gram is "a lowercase, whitespace delimited word with no
punctuation"), exactly:

1. Unicode NFC (composed and decomposed accents are one word);
2. lowercase (``str.lower``);
3. every Unicode punctuation character (general categories Pc, Pd, Ps, Pe, Pi, Pf, Po) removed,
   inside words too (``don't`` -> ``dont``); symbols (``$``, ``+``), digits and letters stay;
4. split at Unicode whitespace (``str.split``); a word that was only punctuation vanishes.

So case, punctuation and any run of whitespace (spaces, tabs, newlines) do not count:

    >>> words("The  CAT,\\n sat -- on (the) mat.")
    ['the', 'cat', 'sat', 'on', 'the', 'mat']

A word's hash is the first 8 bytes of BLAKE2b of its UTF-8 (little-endian uint64); an n-gram's
folds its words' hashes (``h = h * _MULTIPLIER + word``, modulo 2^64) and mixes the result
with splitmix64's finalizer. 64 bits: 10^6 evaluation n-grams against 10^12 training n-grams
give about 0.05 expected false matches.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import sys
import unicodedata

import numpy as np

NORMALIZATION = "nfc+lowercase+strip-unicode-punctuation+split-whitespace"
# Both faster than str.translate (~90 ns a character): bytes.translate for ASCII text, a
# numpy mask over the code points (~8 ns) for the rest.
_ASCII_PUNCTUATION = b"".join(bytes([i]) for i in range(128)
                              if unicodedata.category(chr(i)).startswith("P"))
_WORD = re.compile(r"\S+")  # \S is the complement of str.split's whitespace
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: the fold is a bijection per step


@functools.cache
def _punctuation() -> np.ndarray:
    """True at every punctuation code point (built on first use: ~0.4 s)."""
    return np.array([unicodedata.category(chr(i)).startswith("P")
                     for i in range(sys.maxunicode + 1)])


def _normalize(text: str) -> str:
    """Steps 1-3 of the normalization (the splitting is the caller's)."""
    if text.isascii():
        return text.lower().encode("ascii").translate(None, _ASCII_PUNCTUATION).decode("ascii")
    points = np.frombuffer(unicodedata.normalize("NFC", text).lower().encode(
        "utf-32-le", "surrogatepass"), dtype=np.uint32)
    return points[~_punctuation()[points]].tobytes().decode("utf-32-le", "surrogatepass")


def words(text: str) -> list[str]:
    """The normalized words of ``text`` (see the module docstring)."""
    return _normalize(text).split()


def word_spans(text: str) -> tuple[list[str], np.ndarray]:
    """The normalized words of ``text`` (as ``words``) and each one's (start, end) character
    offsets in ``text`` itself, an (n, 2) int64 array: the whole whitespace-delimited word,
    its punctuation included."""
    found, spans = [], []
    for match in _WORD.finditer(text):
        word = _normalize(match.group())
        if word:
            found.append(word)
            spans.append(match.span())
    return found, np.array(spans, dtype=np.int64).reshape(-1, 2)


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "little")


def word_hashes(items: list[str], cache: dict | None = None) -> np.ndarray:
    """uint64 hashes of ``items``. ``cache``: a dict kept by the caller (word -> hash), which
    saves most of the hashing on natural text; it changes only the speed."""
    if cache is None:
        return np.array([_word_hash(word) for word in items], dtype=np.uint64)
    if len(cache) >= 1 << 20:  # bounded memory on text with endless new words
        cache.clear()
    values = [cache.get(word) for word in items]
    for i, value in enumerate(values):
        if value is None:
            values[i] = cache[items[i]] = _word_hash(items[i])
    return np.array(values, dtype=np.uint64)


def ngram_hashes(hashes: np.ndarray, n: int) -> np.ndarray:
    """The hash of every n consecutive words (``len(hashes) - n + 1`` of them, or none)."""
    count = len(hashes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    out = hashes[:count].copy()
    for i in range(1, n):  # uint64 arithmetic wraps modulo 2^64, as intended
        out *= _MULTIPLIER
        out += hashes[i:i + count]
    out ^= out >> np.uint64(30)  # splitmix64's finalizer: every input bit reaches every output
    out *= np.uint64(0xBF58476D1CE4E5B9)
    out ^= out >> np.uint64(27)
    out *= np.uint64(0x94D049BB133111EB)
    out ^= out >> np.uint64(31)
    return out


def text_ngrams(text: str, n: int, cache: dict | None = None) -> np.ndarray:
    """``ngram_hashes`` of ``text``'s normalized words."""
    return ngram_hashes(word_hashes(words(text), cache), n)


def covered_runs(matched: np.ndarray, *, n: int, count: int) -> np.ndarray:
    """Maximal runs of words covered by the matched n-grams: ``matched`` holds the sorted
    first-word indices of the n-grams found, ``count`` the number of words; returns a (runs, 2)
    array of [first, last] word indices (inclusive).

    >>> covered_runs(np.array([0, 1, 5]), n=2, count=8).tolist()
    [[0, 2], [5, 6]]
    """
    depth = np.zeros(count + 1, dtype=np.int64)
    np.add.at(depth, matched, 1)
    np.add.at(depth, matched + n, -1)
    covered = np.cumsum(depth[:count]) > 0
    edges = np.diff(np.concatenate(([False], covered, [False])).astype(np.int8))
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1], axis=1)


def cut(text: str, spans: np.ndarray) -> str:
    """``text`` without the (start, end) character ``spans`` (sorted, disjoint); the
    whitespace around each span stays.

    >>> cut("keep this, drop THAT. keep", np.array([[11, 21]]))
    'keep this,  keep'
    """
    pieces, at = [], 0
    for start, end in spans.tolist():
        pieces.append(text[at:start])
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """The evaluation sets' distinct n-gram hashes, sorted, and for each the bitmask of the
    sets (``pipeline.quality.eval_sets``: at most 64) holding it."""

    n: int
    hashes: np.ndarray  # uint64, sorted, distinct
    sets: np.ndarray  # uint64: bit i set = evaluation set i holds that n-gram

    @classmethod
    def build(cls, parts, *, n: int) -> "EvalSet":
        """``parts``: (set index, n-gram hashes) pairs, in any order, repeats allowed."""
        parts = list(parts)
        hashes = np.concatenate([h for _, h in parts] + [np.empty(0, np.uint64)])
        sets = np.concatenate([np.full(len(h), 1 << i, dtype=np.uint64) for i, h in parts]
                              + [np.empty(0, np.uint64)])
        order = np.argsort(hashes, kind="stable")
        hashes, sets = hashes[order], sets[order]
        if not len(hashes):
            return cls(n, hashes, sets)
        starts = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
        return cls(n, hashes[starts], np.bitwise_or.reduceat(sets, starts))

    def find(self, grams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions of ``grams`` found here, and each one's set bitmask."""
        if not len(self.hashes) or not len(grams):
            return np.empty(0, np.int64), np.empty(0, np.uint64)
        at = np.minimum(np.searchsorted(self.hashes, grams), len(self.hashes) - 1)
        hit = np.flatnonzero(self.hashes[at] == grams)
        return hit, self.sets[at[hit]]


@dataclasses.dataclass(frozen=True)
class Match:
    """What the evaluation n-grams found in one document."""

    ngrams: int  # the document's n-grams found in the evaluation sets (positions)
    sets: tuple[tuple[int, int], ...]  # (set index, n-grams of that set found), by index
    spans: np.ndarray | None = None  # redact: (start, end) characters cut, sorted, disjoint
    text: str | None = None  # redact: the text without them

    @property
    def removed_chars(self) -> int:
        return 0 if self.spans is None else int((self.spans[:, 1] - self.spans[:, 0]).sum())


def _per_set(masks: np.ndarray) -> tuple[tuple[int, int], ...]:
    combined = int(np.bitwise_or.reduce(masks))
    return tuple((i, int(((masks >> np.uint64(i)) & np.uint64(1)).sum()))
                 for i in range(64) if combined >> i & 1)


def match(text: str, eval_set: EvalSet, *, redact: bool, cache: dict | None = None
          ) -> Match | None:
    """The evaluation n-grams in ``text`` (None: none); with ``redact`` also the character
    spans their words cover (whole whitespace-delimited words, from the first word of the
    first overlapping n-gram to the last word of the last) and the text without them."""
    found, masks = eval_set.find(text_ngrams(text, eval_set.n, cache))
    if not len(found):
        return None
    return match_at(text, found, masks, n=eval_set.n, redact=redact, cache=cache)


def match_at(text: str, found: np.ndarray, masks: np.ndarray, *, n: int, redact: bool,
             cache: dict | None = None) -> Match:
    """``match`` from hits already looked up: ``found`` the positions (first-word indices) of
    ``text``'s n-grams held by the evaluation sets, in any order, and ``masks`` each one's set
    bitmask (``pipeline.quality.eval_join`` finds them shard by shard)."""
    order = np.argsort(found, kind="stable")
    found, masks = found[order], masks[order]
    if not redact:
        return Match(ngrams=len(found), sets=_per_set(masks))
    # Only documents that match pay for the word offsets; the same words, so the same hits.
    items, offsets = word_spans(text)
    runs = covered_runs(found, n=n, count=len(items))
    spans = np.stack([offsets[runs[:, 0], 0], offsets[runs[:, 1], 1]], axis=1)
    return Match(ngrams=len(found), sets=_per_set(masks), spans=spans, text=cut(text, spans))
