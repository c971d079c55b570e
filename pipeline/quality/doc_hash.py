"""A document's identity for exact dedup and contamination removal: normalize, then hash.

Normalization (``NORMALIZATION``) is deliberately small, so that only byte-level accidents of
how a text was stored make two documents equal, never a change of content:

1. Unicode NFC (composed and decomposed accents are the same text);
2. trailing spaces, tabs and carriage returns removed from every line (lines split at
   ``"\\n"``; so CRLF and LF line endings are equal, and invisible trailing blanks do not count).

Nothing else: case, leading indentation, blank lines and inner whitespace all still count.
The digest (``DIGEST``) is BLAKE2b with a 16-byte (128-bit) output of the normalized text's
UTF-8 bytes: at 2^30 documents the chance of any collision is about 2^-69.

Hash files (``doc_hashes/{0..f}.bin`` of every split, see ``pipeline.quality.split_doc_hashes``)
hold sorted, distinct 16-byte digests concatenated, nothing else; the file of a digest is its
first hex digit.

    >>> normalize("cafe\\u0301 \\r\\nx\\t")
    'café\\nx'
    >>> doc_hash("a \\nb") == doc_hash("a\\r\\nb")
    True
"""

from __future__ import annotations

import hashlib
import unicodedata

import numpy as np

NORMALIZATION = "nfc+rstrip-space-tab-cr-per-line"
DIGEST = "blake2b-128"
DIGEST_BYTES = 16
PREFIXES = 16  # hash files per split: one per first hex digit of the digest
_TRAILING = b" \t\r"
_NUMPY_FROM = 2048  # bytes; below, numpy's fixed cost is more than two byte searches


def normalize(text: str) -> str:
    """NFC, then trailing spaces, tabs and CRs stripped from each ``\\n``-separated line."""
    return normalized_bytes(text).decode("utf-8")


def normalized_bytes(text: str) -> bytes:
    """``normalize``'s text as UTF-8, the bytes a digest is of. The lines are stripped on the
    bytes: in UTF-8 the bytes of space, tab, CR and LF only ever stand for those."""
    if not text.isascii():  # ASCII is already NFC; the check costs ~1/100 of normalizing
        text = unicodedata.normalize("NFC", text)
    data = text.encode("utf-8")
    # Most documents have no line ending in a blank: looking costs less than a split.
    if _has_trailing_blank(data):
        data = b"\n".join(line.rstrip(_TRAILING) for line in data.split(b"\n"))
    return data


def _has_trailing_blank(data: bytes) -> bool:
    """Whether some ``\n``-separated line of UTF-8 ``data`` ends in a space, tab or CR."""
    if b"\r" in data or data.endswith((b" ", b"\t")):
        return True
    if len(data) < _NUMPY_FROM:
        return b" \n" in data or b"\t\n" in data
    # A two-byte search walks every byte (~1 ns each, twice); numpy looks only at the byte
    # before each newline.
    codes = np.frombuffer(data, dtype=np.uint8)
    before = codes[:-1][codes[1:] == 10]
    return bool(np.any((before == 32) | (before == 9)))


def doc_hash(text: str) -> bytes:
    """The 16-byte BLAKE2b digest of the normalized text's UTF-8 bytes."""
    return hashlib.blake2b(normalized_bytes(text), digest_size=DIGEST_BYTES).digest()


def prefix(digest: bytes) -> int:
    """Which hash file holds ``digest``: its first hex digit, 0..15."""
    return digest[0] >> 4


def hash_file_name(index: int) -> str:
    return f"{index:x}.bin"


def sorted_unique(digests: bytes) -> bytes:
    """Concatenated 16-byte digests -> the distinct ones, in byte order, concatenated."""
    if len(digests) % DIGEST_BYTES:
        raise ValueError(f"{len(digests)} bytes is not a whole number of {DIGEST_BYTES}-byte "
                         "digests")
    if not digests:
        return b""
    # Two big-endian 64-bit halves sort exactly like the bytes (no per-digest Python objects).
    halves = np.frombuffer(digests, dtype=">u8").reshape(-1, 2)
    order = np.lexsort((halves[:, 1], halves[:, 0]))
    ordered = halves[order]
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    return ordered[keep].tobytes()


def iter_digests(data: bytes):
    """The digests of a hash file's bytes, one ``bytes`` each."""
    if len(data) % DIGEST_BYTES:
        raise ValueError(f"a hash file of {len(data)} bytes is not a whole number of "
                         f"{DIGEST_BYTES}-byte digests")
    for start in range(0, len(data), DIGEST_BYTES):
        yield data[start:start + DIGEST_BYTES]
