"""MinHash signatures of documents over word shingles, for ``--dedup=near``: one-permutation
hashing (Li, Owen, Zhang, NIPS 2012) with optimal densification (Shrivastava, ICML 2017).

Words: the text's UTF-8 bytes, ASCII letters lowercased; every ASCII byte that is not a
letter or a digit (whitespace, punctuation, ``_``, control characters) separates words, and
every other byte (non-ASCII: accented letters, other scripts, non-ASCII spaces) stays inside
its word; non-ASCII letters are not lowercased. A word hashes to 64 bits by a polynomial
over its bytes (``sum c_j * P^(j+1) mod 2^64``, ``P`` odd), computed for all words at once
with numpy (a running total of ``c_j P^(j+1)`` differenced at the word starts, shifted back
by ``P^-start``), then mixed by murmur3's ``fmix64``. A shingle is a run of
``shingle_words`` consecutive words, its words combined polynomially and mixed again; a
document with fewer words has one shingle of all of them, one without words none.

Signature: ``perm`` (a power of two) bins by the top ``log2(perm)`` bits of the shingle hash;
each bin keeps the least hash among its shingles (``np.minimum.at``, no sort), of which the
signature stores the 32 bits after the bin bits. An empty bin (a short document) copies the
bin found by probing a fixed pseudo-random sequence of bins for that bin until a non-empty
one (optimal densification):
the sequence is the same for every document, so two documents agree on a bin with
probability about their Jaccard similarity. ``perm`` uint32 values, little-endian, ``4 * perm``
bytes: a pure function of the text and the options, the same on any machine, runner and worker.
The share of equal values of two signatures estimates the Jaccard similarity of their shingle
sets (``estimate_jaccard``), with standard error about ``sqrt(J (1 - J) / perm)``.
"""

from __future__ import annotations

import dataclasses
import functools
import string

import numpy as np

from common.errors import ConfigError

_MASK = (1 << 64) - 1
_P = 0x100000001B3  # odd (FNV-1a's 64-bit prime), so it has an inverse mod 2^64
_SEGMENT = 1 << 16  # text bytes hashed per numpy pass: bounds memory for a huge document
_POLY = np.uint64(0x9E3779B97F4A7C15)  # odd: the shingle's words, combined polynomially
_PROBES = 32  # densification probes looked up per empty bin at once
_SEPARATORS = frozenset(range(128)) - set((string.ascii_letters + string.digits).encode())
_BYTES = bytes(0 if b in _SEPARATORS else ord(chr(b).lower()) if b < 128 else b
               for b in range(256))  # a bytes.translate table: byte -> code, 0 separates


@dataclasses.dataclass(frozen=True)
class MinHashOptions:
    """The options a signature depends on (``QualityConfig``'s near-dup fields)."""

    perm: int = 128
    shingle_words: int = 5

    def __post_init__(self):
        if self.perm < 2 or self.perm & (self.perm - 1) or self.perm > 4096:
            raise ConfigError(f"--minhash_perm must be a power of two in [2, 4096] (one-"
                              "permutation hashing splits each hash into that many bins), "
                              f"got {self.perm}")


_M1, _M2, _S33 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53), np.uint64(33)


def _fmix64(x: np.ndarray) -> np.ndarray:
    """murmur3's ``fmix64`` of each value, in place (``x`` must be the caller's own)."""
    x ^= x >> _S33
    x *= _M1
    x ^= x >> _S33
    x *= _M2
    x ^= x >> _S33
    return x


@functools.lru_cache(maxsize=1)
def _powers() -> tuple[np.ndarray, np.ndarray]:
    """``P^i`` and ``P^-i`` mod 2^64 for ``i <= _SEGMENT``."""
    inverse = pow(_P, -1, 1 << 64)
    out = []
    for base in (_P, inverse):
        table = np.ones(2 * _SEGMENT, dtype=np.uint64)
        size, step = 1, base
        while size < _SEGMENT + 1:  # table[size:2 size] = table[:size] * base^size (wraps)
            table[size:2 * size] = table[:size] * np.uint64(step)
            size, step = 2 * size, step * step & _MASK
        out.append(table)
    return out[0], out[1]


def _runs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The polynomial hash of each run of word bytes in ``codes`` (uint8, 0: separator; the
    first is a separator), each from the separator before it, and those separators."""
    word = codes != 0
    starts = np.flatnonzero(word[1:] > word[:-1])
    if not len(starts):
        return np.zeros(0, dtype=np.uint64), starts
    forward, backward = _powers()
    # Each run's sum from a running total (twice as fast as ``np.add.reduceat``; both wrap
    # mod 2^64, so the sums are the same): total at the next run's separator minus total
    # just before this run's. ``starts[0] - 1`` may be -1: the first code is 0, so the total
    # before it is 0.
    totals = np.cumsum(codes * forward[:len(codes)])
    before = totals[starts - 1]
    if starts[0] == 0:
        before[0] = 0
    upto = np.empty_like(before)
    upto[:-1] = totals[starts[1:] - 1]
    upto[-1] = totals[-1]
    return (upto - before) * backward[starts], starts


def word_hashes(text: str) -> np.ndarray:
    """The 64-bit hashes of ``text``'s words, in order (with repeats): word bytes ``c_j``
    hash to ``fmix64(sum c_j P^(j+1))``."""
    data = text.encode("utf-8", "surrogatepass").translate(_BYTES)
    pieces, carry = [], None  # carry: (hash, bytes) of a word cut at a segment's end
    for at in range(0, len(data), _SEGMENT):
        codes = np.frombuffer(b"\0" + data[at:at + _SEGMENT], dtype=np.uint8)
        sums, starts = _runs(codes)
        lead = 0
        if carry and len(starts) and starts[0] == 0:  # the cut word goes on
            sums[0] = (carry[0] + int(sums[0]) * pow(_P, carry[1], 1 << 64)) & _MASK
            lead = carry[1]
        elif carry:
            pieces.append(np.array([carry[0]], dtype=np.uint64))
        carry = None
        if len(starts) and codes[-1] and at + _SEGMENT < len(data):
            carry = (int(sums[-1]), len(codes) - 1 - int(starts[-1]) + (
                lead if len(starts) == 1 else 0))
            sums = sums[:-1]
        pieces.append(sums)
    if carry:
        pieces.append(np.array([carry[0]], dtype=np.uint64))
    if not pieces:
        return np.zeros(0, dtype=np.uint64)
    return _fmix64(np.concatenate(pieces) if len(pieces) > 1 else pieces[0])


def shingle_hashes(text: str, *, shingle_words: int) -> np.ndarray:
    """The 64-bit hashes of ``text``'s shingles (with repeats), as a uint64 array."""
    hashes = word_hashes(text)
    if not len(hashes):
        return hashes
    n = min(shingle_words, len(hashes))
    count = len(hashes) - n + 1
    combined = hashes[:count].copy()
    for k in range(1, n):  # h = ((w0 * P + w1) * P + w2) ...: order matters (arrays wrap)
        combined *= _POLY
        combined += hashes[k:k + count]
    return _fmix64(combined)


def _probes(rows: np.ndarray, *, perm: int, block: int) -> np.ndarray:
    """Row ``r``: probes ``block * _PROBES ..`` of the fixed pseudo-random sequence of bins
    that the empty bin ``rows[r]`` probes (the same for every document). Computed for the
    empty bins only: a short document at a large ``perm`` has many, a long one few."""
    probe = np.arange(block * _PROBES, (block + 1) * _PROBES, dtype=np.uint64)
    index = np.add.outer(rows.astype(np.uint64) << np.uint64(32), probe)
    shift = np.uint64(64 - (perm.bit_length() - 1))
    return (_fmix64(index * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)) >> shift).astype(
        np.intp)


def _densify(values: np.ndarray, filled: np.ndarray) -> None:
    """Each empty bin takes the value of the first filled bin of its probe sequence."""
    full = np.flatnonzero(filled)
    if len(full) == 1:  # every sequence ends at the one filled bin: no need to probe
        values[:] = values[full[0]]
        return
    empty = np.flatnonzero(~filled)
    block = 0
    while len(empty):
        table = _probes(empty, perm=len(values), block=block)
        hit = filled[table]
        first = hit.argmax(axis=1)
        found = hit[np.arange(len(empty)), first]
        values[empty[found]] = values[table[found, first[found]]]
        empty = empty[~found]
        block += 1


def signature(text: str, *, options: MinHashOptions) -> bytes | None:
    """``text``'s MinHash signature (``4 * options.perm`` bytes), or None without words."""
    shingles = shingle_hashes(text, shingle_words=options.shingle_words)
    if not len(shingles):
        return None
    bits = np.uint64(options.perm.bit_length() - 1)
    bins = (shingles >> (np.uint64(64) - bits)).astype(np.intp)
    least = np.full(options.perm, _MASK, dtype=np.uint64)
    np.minimum.at(least, bins, shingles)  # each bin's least hash: no sort needed
    values = ((least << bits) >> np.uint64(32)).astype("<u4")
    filled = np.zeros(options.perm, dtype=bool)
    filled[bins] = True
    if not filled.all():
        _densify(values, filled)
    return values.tobytes()


def estimate_jaccard(first: bytes, second: bytes) -> float:
    """The share of equal values of two signatures of the same options."""
    x = np.frombuffer(first, dtype="<u4")
    y = np.frombuffer(second, dtype="<u4")
    if x.shape != y.shape:
        raise ValueError(f"signatures of {len(x)} and {len(y)} permutations cannot be compared")
    return float(np.count_nonzero(x == y)) / len(x)


def shingle_set(text: str, *, shingle_words: int) -> frozenset[int]:
    """The set of shingle hashes, for exact Jaccard similarities (tests, generators)."""
    return frozenset(int(h) for h in shingle_hashes(text, shingle_words=shingle_words))


def jaccard(first: frozenset, second: frozenset) -> float:
    """Exact Jaccard similarity of two sets (1.0 for two empty sets)."""
    union = len(first | second)
    return len(first & second) / union if union else 1.0
