"""Gopher's quality and repetition rules (Rae et al. 2021, "Scaling Language Models: Methods,
Analysis & Insights from Training Gopher", Appendix A.1.1 and Table A1), as DataTrove's
``GopherQualityFilter`` and ``GopherRepetitionFilter`` compute them.

Each function takes the document's text, its words (``pipeline.filters.words.split_words``) and
``active``: rule name -> threshold for the rules that apply to its subset; it returns the first
rule (in the reference's order) that the document fails, or None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from pipeline.filters.failure import Failure, above, below
from pipeline.filters.words import find_duplicates, has_letter, is_symbol

STOP_WORDS = frozenset(("the", "be", "to", "of", "and", "that", "have", "with"))
TOP_NGRAMS = (2, 3, 4)  # gopher_top_{n}gram: the most frequent n-gram's character share
DUP_NGRAMS = (5, 6, 7, 8, 9, 10)  # gopher_dup_{n}gram: the share of repeated n-grams' chars
_BASE = 1_000_003  # odd: invertible mod 2**64
_INVERSE = pow(_BASE, -1, 1 << 64)
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile(r"\n+")


def quality(text: str, words: list[str], active: Mapping[str, float]) -> Failure | None:
    """The quality rules: length, mean word length, symbols, bullets, ellipses, alphabetic
    words, stop words.

    >>> quality("the cat", ["the", "cat"], {"gopher_min_words": 50})
    Failure(rule='gopher_min_words', value=2, threshold=50)
    """
    plain = [w for w in words if not is_symbol(w)]
    found = below("gopher_min_words", len(plain), active) or above(
        "gopher_max_words", len(plain), active)
    if found or not words:
        return found or below("gopher_min_words", 0, active)
    mean = sum(map(len, plain)) / len(plain) if plain else float("nan")
    lines = text.splitlines() or [""]
    checks = (
        lambda: below("gopher_min_mean_word_length", mean, active),
        lambda: above("gopher_max_mean_word_length", mean, active),
        lambda: above("gopher_hash_ratio", text.count("#") / len(words), active),
        lambda: above("gopher_ellipsis_ratio",
                      (text.count("...") + text.count("…")) / len(words), active),
        lambda: above("gopher_bullet_lines", sum(
            line.lstrip().startswith(("•", "-")) for line in lines) / len(lines), active),
        lambda: above("gopher_ellipsis_lines", sum(
            line.rstrip().endswith(("...", "…")) for line in lines) / len(lines), active),
        lambda: below("gopher_alpha_words", sum(
            map(has_letter, words)) / len(words), active),
        lambda: below("gopher_stop_words", len(STOP_WORDS.intersection(words)), active),
    )
    for check in checks:
        found = check()
        if found:
            return found
    return None


def repetition(text: str, words: list[str], active: Mapping[str, float]) -> Failure | None:
    """The repetition rules: duplicate paragraphs and lines (share of items, of characters),
    the top 2-4-gram's character share, the share of characters in repeated 5-10-grams.

    >>> repetition("a b\\n\\na b\\n\\nc", ["a", "b", "a", "b", "c"], {"gopher_dup_para_frac": 0.3})
    Failure(rule='gopher_dup_para_frac', value=0.3333333333333333, threshold=0.3)
    """
    paragraphs = _PARAGRAPHS.split(text.strip())
    count, chars = find_duplicates(paragraphs)
    found = (above("gopher_dup_para_frac", count / len(paragraphs), active)
             or above("gopher_dup_para_char_frac", chars / len(text), active))
    if found:
        return found
    lines = _LINES.split(text)
    count, chars = find_duplicates(lines)
    found = (above("gopher_dup_line_frac", count / len(lines), active)
             or above("gopher_dup_line_char_frac", chars / len(text), active))
    if found or not words:
        return found
    grams = _NGrams(words)
    for n in TOP_NGRAMS:
        rule = f"gopher_top_{n}gram"
        if rule in active and len(words) >= n:
            found = above(rule, grams.top_chars(n) / len(text), active)
            if found:
                return found
    for n in DUP_NGRAMS:
        rule = f"gopher_dup_{n}gram"
        if rule in active:
            found = above(rule, grams.duplicate_chars(n) / len(text), active)
            if found:
                return found
    return None


class _NGrams:
    """A document's word n-grams, each word an integer id, compared whole in numpy (exact: no
    hashing) instead of as joined strings in Python."""

    def __init__(self, words: list[str]):
        ids: dict[str, int] = {}
        self._ids = np.array([ids.setdefault(w, len(ids)) for w in words], dtype=np.int32)
        self._lengths = np.array([len(w) for w in words], dtype=np.int64)
        self._ends = np.concatenate(([0], np.cumsum(self._lengths)))
        self._joined = "".join(words)
        self._prefix = None  # of the joined words' hash, made when first needed

    def _keys(self, n: int) -> np.ndarray:
        """One opaque key per n-gram start: n ids as one fixed-size byte string."""
        windows = np.lib.stride_tricks.sliding_window_view(self._ids, n)
        return np.ascontiguousarray(windows).view(np.dtype((np.void, 4 * n))).ravel()

    def _id_hashes(self, n: int) -> np.ndarray:
        """A polynomial hash (mod 2**64) of each n-gram's word ids: sorts as fast as integers."""
        ids = self._ids.astype(np.uint64) + np.uint64(1)
        hashes = ids[:len(ids) - n + 1].copy()
        for k in range(1, n):
            hashes = hashes * np.uint64(_BASE) + ids[k:len(ids) - n + 1 + k]
        return hashes

    def _chars(self, n: int) -> np.ndarray:
        """Characters of the words of each n-gram (without separators)."""
        return self._ends[n:] - self._ends[:-n]

    def top_chars(self, n: int) -> int:
        """Characters of the most frequent n-gram joined by spaces, times its count (the first
        to occur of those most frequent, as ``collections.Counter.most_common`` picks)."""
        _, first, inverse, counts = np.unique(self._id_hashes(n), return_index=True,
                                              return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        best = np.flatnonzero(counts == counts.max())
        start = int(first[best].min())
        same = np.flatnonzero(inverse == inverse[start])
        windows = np.lib.stride_tricks.sliding_window_view(self._ids, n)
        if (windows[same] == windows[start]).all():  # no two n-grams share a hash
            return (int(self._chars(n)[start]) + n - 1) * len(same)
        _, first, inverse, counts = np.unique(self._keys(n), return_index=True,
                                              return_inverse=True, return_counts=True)
        best = np.flatnonzero(counts == counts.max())
        start = int(first[best].min())
        return (int(self._chars(n)[start]) + n - 1) * int(counts[inverse[start]])

    def duplicate_chars(self, n: int) -> int:
        """Characters in n-grams equal to an earlier one, scanning left to right and jumping
        past each repeat (DataTrove's ``find_all_duplicate``, whose n-gram is its words joined
        without a separator). Only n-grams whose hash occurs more than once can repeat; the
        scan visits those alone and compares their text itself, so a collision cannot count."""
        if len(self._ids) < n:
            return 0
        hashes = self._joined_hashes(n)
        _, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
        starts = np.flatnonzero(counts[inverse.ravel()] > 1)
        if not len(starts):
            return 0
        seen: set[str] = set()
        total = position = 0
        for start in starts.tolist():
            if start < position:  # inside a repeat just counted: not visited
                continue
            gram = self._joined[self._ends[start]:self._ends[start + n]]
            if gram in seen:
                total += len(gram)
                position = start + n
            else:
                seen.add(gram)
                position = start + 1
        return total

    def _joined_hashes(self, n: int) -> np.ndarray:
        """A polynomial hash (mod 2**64) of each n-gram's words joined without a separator."""
        if self._prefix is None:
            codes = np.frombuffer(self._joined.encode("utf-32-le"), dtype=np.uint32)
            powers = np.full(len(codes), _BASE, dtype=np.uint64)
            powers[0] = 1
            powers = np.cumprod(powers)  # _BASE**j, wrapping mod 2**64
            inverse = np.full(len(codes) + 1, _INVERSE, dtype=np.uint64)
            inverse[0] = 1
            self._inverse = np.cumprod(inverse)  # _BASE**-j
            self._prefix = np.concatenate((np.zeros(1, dtype=np.uint64),
                                           np.cumsum(codes.astype(np.uint64) * powers)))
        starts, ends = self._ends[:-n], self._ends[n:]
        return (self._prefix[ends] - self._prefix[starts]) * self._inverse[starts]
