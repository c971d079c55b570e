"""Gopher's rules: the n-gram measures equal DataTrove's definitions on random word lists; the
quality rules on small hand-made texts."""

import collections
import random

from pipeline.filters import gopher
from pipeline.filters.gopher import _NGrams
from pipeline.filters.words import split_words


# The reference definitions (datatrove.pipeline.filters.gopher_repetition_filter), verbatim.
def find_all_duplicate(words, n):
    n_words = len(words)
    unique = set()
    repeated_chars, idx = 0, 0
    while idx < n_words - n + 1:
        n_gram = "".join(words[idx: idx + n])
        if n_gram in unique:
            repeated_chars += len(n_gram)
            idx += n
        else:
            unique.add(n_gram)
            idx += 1
    return repeated_chars


def find_top_duplicate(words, n):
    counter = collections.Counter(" ".join(words[i: i + n]) for i in range(len(words) - n + 1))
    top = counter.most_common(1)[0]
    return len(top[0]) * top[1]


def test_ngram_measures_equal_the_reference_definitions():
    rng = random.Random(0)
    for _ in range(1500):
        vocab = ["a", "b", "ab", "ba", "c", "é", "aa", "𝄞"][:rng.randint(1, 8)]
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
        grams = _NGrams(words)
        for n in gopher.DUP_NGRAMS:
            assert grams.duplicate_chars(n) == find_all_duplicate(words, n), (words, n)
        for n in gopher.TOP_NGRAMS:
            if len(words) >= n:
                assert grams.top_chars(n) == find_top_duplicate(words, n), (words, n)


def test_joined_ngrams_compare_their_text_not_their_words():
    # "ab c" and "a bc" join to the same text: the reference counts the second as a repeat.
    words = ["ab", "c", "d", "e", "f", "x", "a", "bc", "d", "e", "f"]
    assert _NGrams(words).duplicate_chars(5) == find_all_duplicate(words, 5) == 6


def _quality(text, **active):
    found = gopher.quality(text, split_words(text), active)
    return found and (found.rule, round(found.value, 3))


def test_quality_rules_on_small_texts():
    prose = "The cat sat on the mat and looked at the dog with some interest. " * 5
    assert _quality(prose, gopher_min_words=75) == ("gopher_min_words", 70)
    assert _quality(prose, gopher_min_words=10) is None
    assert _quality("# a # b # c", gopher_hash_ratio=0.1) == ("gopher_hash_ratio", 0.5)
    assert _quality("- one\n- two\nthree", gopher_bullet_lines=0.6) == (
        "gopher_bullet_lines", 0.667)
    assert _quality("cat dog eel", gopher_stop_words=2) == ("gopher_stop_words", 0)
    # distinct stop words, case-sensitive: "The" and "the" are one, "The" alone none
    assert _quality("The the the cat", gopher_stop_words=2) == ("gopher_stop_words", 1)
    assert _quality("1 2 3 cat", gopher_alpha_words=0.8) == ("gopher_alpha_words", 0.25)


def test_repetition_rules_on_small_texts():
    def first(text, **active):
        found = gopher.repetition(text, split_words(text), active)
        return found and found.rule

    assert first("a b\n\na b\n\nc d", gopher_dup_para_frac=0.3) == "gopher_dup_para_frac"
    assert first("x\ny\nx\nz", gopher_dup_line_frac=0.2) == "gopher_dup_line_frac"
    assert first("x\ny\nx\nz", gopher_dup_line_frac=0.3) is None
