import hashlib
import random
import re
import statistics

import pytest

from common.errors import ConfigError
from pipeline.quality import minhash

OPTIONS = minhash.MinHashOptions(perm=256, shingle_words=5)
MASK = (1 << 64) - 1


def _words(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(5000)}" for _ in range(n)]


def _fmix64(x: int) -> int:
    x ^= x >> 33
    x = x * 0xFF51AFD7ED558CCD & MASK
    x ^= x >> 33
    x = x * 0xC4CEB9FE1A85EC53 & MASK
    return x ^ (x >> 33)


def _reference_word_hashes(text: str) -> list[int]:
    """The documented word hash, one word at a time: ASCII bytes other than letters and
    digits separate, ASCII letters lowercased, other bytes kept; fmix64(sum c_j P^(j+1))."""
    data = text.encode("utf-8", "surrogatepass").lower()  # bytes.lower(): ASCII only
    return [_fmix64(sum(c * pow(minhash._P, j + 1, 1 << 64) for j, c in enumerate(word)) & MASK)
            for word in re.split(rb"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+", data) if word]


@pytest.fixture
def small_segments(monkeypatch):
    """Hash texts a few bytes at a time, so that words cross (several) segment ends."""
    def use(size):
        monkeypatch.setattr(minhash, "_SEGMENT", size)
        minhash._powers.cache_clear()
    yield use
    monkeypatch.undo()
    minhash._powers.cache_clear()


def _random_text(rng: random.Random) -> str:
    pieces = ["a", "B", "zz", " ", "  ", ",", "é", "Ω", "\ud800", "\n", "xyzw" * 5, "7", "_"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))


def test_word_hashes_are_the_documented_hash_whatever_the_segment_size(small_segments):
    texts = [_random_text(random.Random(seed)) for seed in range(200)]
    expected = [_reference_word_hashes(text) for text in texts]
    for size in (1 << 16, 1, 2, 3, 7, 64):
        small_segments(size)
        assert [[int(h) for h in minhash.word_hashes(t)] for t in texts] == expected, size


def test_words_are_split_at_ascii_non_alphanumerics_and_keep_other_bytes():
    def words(text):
        return [int(h) for h in minhash.word_hashes(text)]
    assert words("Foo-BAR, baz!\t42") == words("foo bar baz 42")
    assert words("\x00foo\x7fbar\x1f") == words("foo bar")
    assert len(words("café au lait")) == 3 and words("café") != words("caf")
    assert len(words("naïve\u00a0Straße")) == 1  # a non-ASCII space stays inside the word
    assert words("É") != words("é")  # only ASCII letters are lowercased
    assert words("snake_case") == words("snake case")
    assert words("") == words(" .,; ") == []


def test_the_signature_estimates_the_jaccard_of_the_shingle_sets():
    base = _words(1, 600)
    for changed in (10, 40, 120, 300):
        other = list(base)
        for at in random.Random(changed).sample(range(600), changed):
            other[at] = "x" + other[at]
        a, b = " ".join(base), " ".join(other)
        exact = minhash.jaccard(minhash.shingle_set(a, shingle_words=5),
                                minhash.shingle_set(b, shingle_words=5))
        estimate = minhash.estimate_jaccard(minhash.signature(a, options=OPTIONS),
                                            minhash.signature(b, options=OPTIONS))
        # within 4 standard errors of sqrt(J (1 - J) / perm)
        assert abs(estimate - exact) <= 4 * (exact * (1 - exact) / 256) ** 0.5 + 0.01


@pytest.mark.parametrize("words", [8, 40, 200, 1500])
def test_the_estimate_is_unbiased_for_short_and_long_documents(words):
    """Short documents leave bins empty (densified); the estimate must still be unbiased,
    with an error about the standard error ``sqrt(J (1 - J) / perm)``."""
    options = minhash.MinHashOptions(perm=128)
    errors, scaled = [], []
    for seed in range(60):
        rng = random.Random(seed)
        base = [f"w{rng.randrange(100000)}" for _ in range(words)]
        other = list(base)
        for at in rng.sample(range(words), rng.randint(0, words // 3)):
            other[at] = "x" + other[at]
        if seed % 3 == 0:  # different sizes too
            other = other[:max(1, round(words * rng.uniform(0.5, 1.0)))]
        a, b = " ".join(base), " ".join(other)
        exact = minhash.jaccard(minhash.shingle_set(a, shingle_words=5),
                                minhash.shingle_set(b, shingle_words=5))
        estimate = minhash.estimate_jaccard(minhash.signature(a, options=options),
                                            minhash.signature(b, options=options))
        errors.append(estimate - exact)
        scaled.append(abs(estimate - exact) / max((exact * (1 - exact) / 128) ** 0.5, 0.01))
    assert abs(statistics.mean(errors)) <= 0.015
    assert statistics.mean(abs(e) for e in errors) <= 0.04
    assert max(scaled) <= 4.5


def test_empty_bins_copy_filled_ones():
    one = minhash.signature("only five words in here", options=minhash.MinHashOptions(perm=64))
    assert len(set(one)) <= 4 and len(set(one[i:i + 4] for i in range(0, 256, 4))) == 1
    few = minhash.signature(" ".join(_words(3, 12)), options=minhash.MinHashOptions(perm=64))
    assert 1 < len(set(few[i:i + 4] for i in range(0, 256, 4))) <= 8  # 8 shingles at most


def test_shingles_are_lowercased_word_runs_and_short_texts_have_one():
    assert minhash.shingle_set("A b, C!", shingle_words=5) == minhash.shingle_set(
        "a b c", shingle_words=5)
    assert len(minhash.shingle_set("a b c", shingle_words=5)) == 1
    assert len(minhash.shingle_set("a b c d e f", shingle_words=5)) == 2
    assert minhash.shingle_set("a b c d e f", shingle_words=5) != minhash.shingle_set(
        "a b c d f e", shingle_words=5)
    assert minhash.signature("  ... ", options=OPTIONS) is None


def test_the_signature_is_a_pure_function_of_text_and_options(small_segments):
    text = " ".join(_words(2, 20000))  # more than one 64 KiB segment
    signature = minhash.signature(text, options=OPTIONS)
    assert len(signature) == 4 * 256
    assert signature == minhash.signature(text, options=OPTIONS)
    assert minhash.estimate_jaccard(signature, signature) == 1.0
    assert minhash.signature(text, options=minhash.MinHashOptions(perm=256, shingle_words=3)
                             ) != signature
    # Pinned bytes: the same on any machine (no randomness: fixed hashes and probes).
    pangram = "The quick brown fox jumps over the lazy dog; Größe ändert nichts."
    assert hashlib.sha256(minhash.signature(
        pangram, options=minhash.MinHashOptions(perm=8))).hexdigest()[:16] == PINNED_SMALL
    assert hashlib.sha256(minhash.signature(
        pangram * 50, options=minhash.MinHashOptions())).hexdigest()[:16] == PINNED_DEFAULT
    small_segments(1000)
    assert minhash.signature(text, options=OPTIONS) == signature


@pytest.mark.parametrize("perm", [0, 1, 96, 8192])
def test_perm_must_be_a_power_of_two(perm):
    with pytest.raises(ConfigError, match=f"power of two.*got {perm}"):
        minhash.MinHashOptions(perm=perm)


def test_signatures_of_different_sizes_do_not_compare():
    with pytest.raises(ValueError, match="cannot be compared"):
        minhash.estimate_jaccard(b"\0" * 8, b"\0" * 16)


PINNED_SMALL = "3e621f70fac8167a"
PINNED_DEFAULT = "d74d613389535712"
