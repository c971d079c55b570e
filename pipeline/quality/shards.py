"""How many shards near dedup's band rows and signatures travel in: a rule of the input size.

Fixed counts sized for the whole Pile put ~820,000 signatures on one worker there and thousands
of near-empty shards on a small run; so both counts follow the input listing's byte total,
computed once into the plan (``pipeline.quality.plan``) and recorded in the manifest:

- documents ~= input bytes / ``BYTES_PER_DOCUMENT`` (the Pile's zstd files: ~2 KB per
  document);
- band shards = documents x bands / ``BAND_ROWS_PER_SHARD``, signature shards = documents /
  ``SIGNATURES_PER_SHARD``, each rounded up to a power of two within [1, ``MAX_SHARDS``].

So a shard holds about a million band rows (~26 MB of columns) and at most ~65,000 signatures
(~0.6 KB each at 128 permutations) whatever the input size, up to ``MAX_SHARDS``. The counts
move only which worker handles a key, never a decision.

    >>> shard_counts(input_bytes=17 * 2**20, bands=16)
    (1, 1)
    >>> shard_counts(input_bytes=460 * 10**9, bands=16)
    (4096, 4096)
"""

from __future__ import annotations

BYTES_PER_DOCUMENT = 2048
BAND_ROWS_PER_SHARD = 2**20
SIGNATURES_PER_SHARD = 2**16
MAX_SHARDS = 2**16


def _power_of_two(count: float) -> int:
    shards = 1
    while shards < count and shards < MAX_SHARDS:
        shards *= 2
    return shards


def shard_counts(*, input_bytes: int, bands: int) -> tuple[int, int]:
    """(band shards, signature shards) for an input of ``input_bytes`` (the listing's total)."""
    documents = input_bytes / BYTES_PER_DOCUMENT
    return (_power_of_two(documents * bands / BAND_ROWS_PER_SHARD),
            _power_of_two(documents / SIGNATURES_PER_SHARD))
