"""A seeded bijection of ``[0, n)`` computed on the fly, shared by the writer and the reader.

The pipeline's ``--shuffle=global`` writes shards in its order, and the trainer's
``--order=global`` reads records in it (one permutation per epoch). Shard ``k`` of a shuffled
split holds the records at shuffled positions ``[k*R, (k+1)*R)``; position ``p`` holds global
record ``permute(p)`` (records numbered in the unshuffled order: parts by (epoch, file, chunk),
then within each part). No permutation of all records is ever materialized: any worker maps
any range of positions on its own, in O(range) memory.

The bijection is a balanced Feistel network over ``2^(2h)`` values (the smallest even power
of two >= n), six rounds whose round function is a keyed 64-bit mixer (SplitMix64's
finalizer) with per-round keys drawn from the seed, plus *cycle walking*: a value that lands
at or beyond n is permuted again until it falls inside. A Feistel network is a bijection
whatever its round function, and cycle walking restricts a bijection of a superset to one of
``[0, n)``; the expected number of walks is below 4.

    >>> p = Permutation(n=10, seed=0)
    >>> sorted(p.forward(np.arange(10)).tolist()) == list(range(10))
    True
"""

from __future__ import annotations

import hashlib

import numpy as np

ROUNDS = 6
ALGORITHM = f"feistel-{ROUNDS}-splitmix64-cycle-walking"
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 arrays (wrap-around multiplication is intended)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


class Permutation:
    """A bijection of ``[0, n)`` for one seed: ``forward`` (position -> record) and
    ``inverse`` (record -> position), on int arrays of any length. O(1) memory in ``n``.

    ``seed`` is an int (the pipeline's) or a string that names a stream (the trainer's
    ``order:{seed}:{epoch}``); either keys the rounds through its text."""

    def __init__(self, *, n: int, seed: int | str):
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self.n = n
        bits = max(2, (max(n, 2) - 1).bit_length())
        self._half = (bits + 1) // 2
        self._mask = np.uint64((1 << self._half) - 1)
        self._keys = [
            np.uint64(int.from_bytes(hashlib.blake2b(f"shuffle:{seed}:{r}".encode(),
                                                     digest_size=8).digest(), "little"))
            for r in range(ROUNDS)
        ]

    def _round(self, value: np.ndarray, key) -> np.ndarray:
        return _mix(value ^ key) & self._mask

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        shift = np.uint64(self._half)
        left, right = x >> shift, x & self._mask
        for key in self._keys:
            left, right = right, left ^ self._round(right, key)
        return (left << shift) | right

    def _decrypt(self, x: np.ndarray) -> np.ndarray:
        shift = np.uint64(self._half)
        left, right = x >> shift, x & self._mask
        for key in reversed(self._keys):
            left, right = right ^ self._round(left, key), left
        return (left << shift) | right

    def _walk(self, values, step) -> np.ndarray:
        x = np.asarray(values, dtype=np.uint64).reshape(-1)
        if len(x) and int(x.max()) >= self.n:
            raise ValueError(f"values must be in [0, {self.n})")
        out = step(x)
        outside = out >= np.uint64(self.n)
        while outside.any():  # cycle walking: ends, because the walk stays on x's cycle
            out[outside] = step(out[outside])
            outside = out >= np.uint64(self.n)
        return out.astype(np.int64)

    def forward(self, positions) -> np.ndarray:
        """Shuffled positions -> global record indexes."""
        return self._walk(positions, self._encrypt)

    def inverse(self, records) -> np.ndarray:
        """Global record indexes -> their shuffled positions."""
        return self._walk(records, self._decrypt)
