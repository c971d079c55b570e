"""``--decontaminate``'s pre-filter: a Bloom filter of the evaluation n-grams, so that the keyed
join (``pipeline.quality.eval_join``) shuffles only the document n-grams that may be in an
evaluation set instead of every one.

The filter is a bit array of ``size_bits`` bits (a power of two, from ``filter_bits``: about
``BITS_PER_NGRAM`` bits per evaluation n-gram, at most ``MAX_BITS``: 32 MiB whatever the
evaluation set) and ``probes`` bit positions per n-gram, taken from the n-gram's 64-bit hash
(``pipeline.quality.ngrams``, already mixed) without hashing again: ``low + i * high`` modulo
``size_bits`` for i < ``probes`` (Kirsch and Mitzenmacher 2006, "Less hashing, same
performance"), ``low`` and ``high`` the hash's 32-bit halves (``high`` made odd).

It never rejects an n-gram added to it; a false positive only costs one hash shuffled, since
the join still looks every candidate up exactly. ``BuildFilter`` ORs the evaluation pieces'
filters (a ``CombineFn`` whose accumulator is one filter) and writes ``eval_filter.bin``:

    >>> f = EvalFilter.empty(size_bits=1 << 10, probes=3)
    >>> f.add(np.array([1, 2, 3], dtype=np.uint64))
    >>> f.may_contain(np.array([1, 2, 3], dtype=np.uint64)).tolist()
    [True, True, True]
    >>> f.set_bits() <= 9
    True
"""

from __future__ import annotations

import math
import struct

import apache_beam as beam
import numpy as np

from common import storage
from schemas.claim import NO_FENCE, Fence

FILTER_NAME = "eval_filter.bin"
BITS_PER_NGRAM = 16  # ~0.05% false positives with 8 probes
MIN_BITS = 1 << 16
MAX_BITS = 1 << 28  # 32 MiB: a worker's memory for the filter, whatever the evaluation set
MAX_PROBES = 8
_MAGIC = b"PPEVBLM1"
_HEADER = struct.Struct("<8sQQ")  # magic, size_bits, probes
_LOW = np.uint64(0xFFFFFFFF)


def filter_bits(*, ngrams: int) -> int:
    """Bits for a filter of about ``ngrams`` evaluation n-grams: the power of two at or above
    ``BITS_PER_NGRAM`` a n-gram, within [``MIN_BITS``, ``MAX_BITS``].

    >>> filter_bits(ngrams=0), filter_bits(ngrams=1 << 20), filter_bits(ngrams=1 << 40)
    (65536, 16777216, 268435456)
    """
    wanted = max(1, ngrams * BITS_PER_NGRAM)
    return min(MAX_BITS, max(MIN_BITS, 1 << (wanted - 1).bit_length()))


def filter_probes(*, size_bits: int, ngrams: int) -> int:
    """Probes that minimize false positives for ``ngrams`` n-grams in ``size_bits`` bits
    (``size_bits / ngrams * ln 2``), within [1, ``MAX_PROBES``].

    >>> filter_probes(size_bits=1 << 24, ngrams=1 << 20), filter_probes(size_bits=64, ngrams=64)
    (8, 1)
    """
    best = round(size_bits / max(1, ngrams) * math.log(2))
    return max(1, min(MAX_PROBES, best))


def filter_size(*, ngrams: int) -> dict:
    """``size_bits`` and ``probes`` for about ``ngrams`` evaluation n-grams (the join's
    estimate from the files' size, ``eval_join.shard_count``: high on purpose, so the filter
    errs on the large side).

    >>> filter_size(ngrams=1 << 20)
    {'size_bits': 16777216, 'probes': 8}
    """
    size_bits = filter_bits(ngrams=ngrams)
    return {"size_bits": size_bits, "probes": filter_probes(size_bits=size_bits, ngrams=ngrams)}


class EvalFilter:
    """A Bloom filter of n-gram hashes (see the module docstring); ``bits`` a uint8 array of
    ``size_bits / 8`` bytes, bit ``p`` at ``bits[p >> 3] >> (p & 7)``."""

    def __init__(self, bits: np.ndarray, *, probes: int):
        self.bits = bits
        self.probes = probes
        self._mask = np.uint64(len(bits) * 8 - 1)

    @classmethod
    def empty(cls, *, size_bits: int, probes: int) -> EvalFilter:
        if size_bits < 8 or size_bits & (size_bits - 1) or not 1 <= probes <= 64:
            raise ValueError(f"a filter of {size_bits} bits and {probes} probes: the bits must "
                             "be a power of two of at least 8, the probes 1 to 64")
        return cls(np.zeros(size_bits // 8, dtype=np.uint8), probes=probes)

    @property
    def size_bits(self) -> int:
        return len(self.bits) * 8

    def _position(self, low: np.ndarray, high: np.ndarray, probe: int) -> np.ndarray:
        return (low + np.uint64(probe) * high) & self._mask  # uint64 wraps, as intended

    def add(self, hashes: np.ndarray) -> None:
        """Set the bits of ``hashes`` (uint64), in place."""
        low, high = hashes & _LOW, (hashes >> np.uint64(32)) | np.uint64(1)
        for probe in range(self.probes):
            at = self._position(low, high, probe)
            np.bitwise_or.at(self.bits, at >> np.uint64(3),
                             np.left_shift(1, at & np.uint64(7)).astype(np.uint8))

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """A bool per hash: False only for a hash never added."""
        keep = np.ones(len(hashes), dtype=bool)
        where = np.arange(len(hashes))
        low, high = hashes & _LOW, (hashes >> np.uint64(32)) | np.uint64(1)
        for probe in range(self.probes):  # each probe looks only at the hashes still in
            at = self._position(low, high, probe)
            hit = (self.bits[at >> np.uint64(3)] >> (at & np.uint64(7)).astype(np.uint8)) & 1
            gone = hit == 0
            keep[where[gone]] = False
            where, low, high = where[~gone], low[~gone], high[~gone]
        return keep

    def merge(self, other: EvalFilter) -> None:
        """OR ``other`` (of the same size and probes) into this one, in place."""
        np.bitwise_or(self.bits, other.bits, out=self.bits)

    def set_bits(self) -> int:
        return int(np.unpackbits(self.bits).sum())

    def false_positive_rate(self) -> float:
        """The chance that a hash never added passes: (share of bits set) ** probes."""
        return (self.set_bits() / self.size_bits) ** self.probes

    def stats(self) -> dict:
        """The manifest's ``quality.decontamination`` fields for this filter."""
        return {"filter_bytes": len(self.bits), "filter_probes": self.probes,
                "filter_false_positive_rate": float(f"{self.false_positive_rate():.3g}")}

    def to_bytes(self) -> bytes:
        return _HEADER.pack(_MAGIC, self.size_bits, self.probes) + self.bits.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes, *, path: str = "") -> EvalFilter:
        """Raises ValueError naming ``path`` for bytes that are not a whole filter."""
        if len(data) >= _HEADER.size:
            magic, size_bits, probes = _HEADER.unpack_from(data)
            if magic == _MAGIC and len(data) == _HEADER.size + size_bits // 8:
                bits = np.frombuffer(data, dtype=np.uint8, offset=_HEADER.size).copy()
                return cls(bits, probes=probes)
        raise ValueError(f"{path or 'data'}: {len(data)} bytes that are not an evaluation "
                         f"n-gram filter ({FILTER_NAME}); rerun the pre-pass to rewrite it")


def read_filter(directory: str) -> EvalFilter:
    path = storage.join(directory, FILTER_NAME)
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        return EvalFilter.from_bytes(handle.read(), path=path)


def write_filter(eval_filter: EvalFilter, *, directory: str,
                 fence: Fence = NO_FENCE) -> EvalFilter:
    """Write ``eval_filter`` to ``directory``/``FILTER_NAME`` (atomically, behind ``fence``);
    returns it."""
    path = storage.join(directory, FILTER_NAME)
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write(eval_filter.to_bytes())
    return eval_filter


class FilterFn(beam.CombineFn):
    """Evaluation pieces ``(set index, hashes)`` -> one ``EvalFilter`` of them all; the
    accumulator is one filter (``size_bits / 8`` bytes), whatever the number of pieces."""

    def __init__(self, *, size_bits: int, probes: int):
        self._size_bits, self._probes = size_bits, probes

    def create_accumulator(self):
        return EvalFilter.empty(size_bits=self._size_bits, probes=self._probes)

    def add_input(self, accumulator, piece):
        accumulator.add(piece[1])
        return accumulator

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        merged = next(accumulators)
        for other in accumulators:
            merged.merge(other)
        return merged

    def extract_output(self, accumulator):
        return accumulator


class BuildFilter(beam.PTransform):
    """PCollection[(shard, (set index, hashes))] -> a one-element PCollection: the
    ``EvalFilter`` of every hash (a side input for the probes), written to ``directory``."""

    def __init__(self, *, size_bits: int, probes: int, directory: str,
                 fence: Fence = NO_FENCE):
        super().__init__()
        self._size_bits, self._probes, self._directory = size_bits, probes, directory
        self._fence = fence

    def expand(self, pieces):
        return (pieces
                | "Pieces" >> beam.Values()
                | "OrPieces" >> beam.CombineGlobally(FilterFn(size_bits=self._size_bits,
                                                              probes=self._probes))
                | "WriteFilter" >> beam.Map(write_filter, directory=self._directory,
                                              fence=self._fence))
