"""doc_hash.py: the normalization's exact rules, the digest, and the hash-file helpers."""

import hashlib
import os
import unicodedata

import pytest

from pipeline.quality import doc_hash


@pytest.mark.parametrize("a, b", [
    ("café", unicodedata.normalize("NFD", "café")),  # composed vs decomposed accent
    ("a\nb", "a\r\nb"),  # CRLF vs LF
    ("a \t\nb", "a\nb  "),  # trailing blanks of any line
    ("x\r", "x"),  # a lone final CR
])
def test_equal_after_normalization(a, b):
    assert doc_hash.normalize(a) == doc_hash.normalize(b)
    assert doc_hash.doc_hash(a) == doc_hash.doc_hash(b)


@pytest.mark.parametrize("a, b", [
    ("Case", "case"),  # case counts
    ("  indented", "indented"),  # leading whitespace counts
    ("a  b", "a b"),  # inner whitespace counts
    ("a\n\nb", "a\nb"),  # blank lines count
    ("ﬁ", "fi"),  # NFKC would fold this ligature; NFC does not
    ("a\u00a0", "a"),  # only space, tab and CR are trailing blanks
])
def test_different_after_normalization(a, b):
    assert doc_hash.doc_hash(a) != doc_hash.doc_hash(b)


def test_fast_paths_equal_the_definition_on_random_texts():
    # normalize() skips NFC for ASCII and the per-line strip when no line ends in a blank;
    # both shortcuts must give exactly NFC + strip-every-line.
    import random

    rng = random.Random(7)
    alphabet = ["a", "Z", " ", "\t", "\r", "\n", "e\u0301", "é", "\u00a0", "x "]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        nfc = unicodedata.normalize("NFC", text)
        expected = "\n".join(line.rstrip(" \t\r") for line in nfc.split("\n"))
        assert doc_hash.normalize(text) == expected, repr(text)


def test_digest_on_bytes_equals_the_definition_on_short_and_long_texts():
    # doc_hash() strips the lines of the UTF-8 bytes, and looks for blanks before a newline
    # with numpy from 2 KB: both must give the digest of normalize()'s text.
    import random

    rng = random.Random(11)
    alphabet = ["a", "é", " ", "\t", "\r", "\n", "e\u0301", "\u00a0", "\u2028", "日", "word "]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
             for _ in range(2000)]
    long_clean = "line of text\n" * 400
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(500, 1500)))
              for _ in range(100)]
    texts += [long_clean, long_clean + " ", long_clean[:2500] + " \n" + long_clean,
              long_clean[:3000] + "\t\nend", "é" * 1500 + " \nx"]
    for text in texts:
        expected = hashlib.blake2b(doc_hash.normalize(text).encode(), digest_size=16).digest()
        assert doc_hash.doc_hash(text) == expected, repr(text[:80])


def test_digest_is_blake2b_128_of_the_normalized_utf8():
    text = "e\u0301 \r\nz"
    assert doc_hash.normalize(text) == "é\nz"
    assert doc_hash.doc_hash(text) == hashlib.blake2b("é\nz".encode(), digest_size=16).digest()
    assert doc_hash.prefix(bytes([0xA7]) + bytes(15)) == 10
    assert doc_hash.hash_file_name(10) == "a.bin"


def test_sorted_unique_sorts_bytes_and_drops_repeats():
    digests = [os.urandom(16) for _ in range(300)]
    data = b"".join(digests + digests[:50])
    assert doc_hash.sorted_unique(data) == b"".join(sorted(set(digests)))
    assert list(doc_hash.iter_digests(doc_hash.sorted_unique(data))) == sorted(set(digests))
    assert doc_hash.sorted_unique(b"") == b""
    with pytest.raises(ValueError, match="16-byte"):
        doc_hash.sorted_unique(b"x" * 17)
