"""LSH banding of MinHash signatures (Leskovec, Rajaraman, Ullman, "Mining of Massive
Datasets", ch. 3.4): documents that agree on every row of some band become candidates.

A signature of ``perm`` values splits into ``bands`` bands of ``rows = perm // bands`` values.
Two documents of Jaccard similarity ``s`` share at least one band with probability
``1 - (1 - s^rows)^bands`` (``candidate_probability``), an S-curve that rises around
``(1 / bands)^(1 / rows)`` (``threshold``). Each band's key is the band index and an 8-byte
BLAKE2b digest of its values, so the documents of one key meet in one group of a shuffle and
no worker ever holds all signatures.
"""

from __future__ import annotations

import hashlib

KEY_DIGEST_BYTES = 8


def rows_per_band(*, perm: int, bands: int) -> int:
    if bands < 1 or perm % bands:
        raise ValueError(f"{perm} permutations do not split into {bands} equal bands")
    return perm // bands


def band_keys(signature: bytes, *, bands: int) -> list[bytes]:
    """One key per band: 2 bytes of band index, then the digest of the band's values."""
    width = len(signature) // bands
    if width * bands != len(signature):
        raise ValueError(f"a {len(signature)}-byte signature does not split into {bands} bands")
    return [index.to_bytes(2, "big") + hashlib.blake2b(
        signature[index * width:(index + 1) * width], digest_size=KEY_DIGEST_BYTES).digest()
        for index in range(bands)]


def candidate_probability(similarity: float, *, rows: int, bands: int) -> float:
    """The chance two documents of Jaccard ``similarity`` share at least one band."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def threshold(*, rows: int, bands: int) -> float:
    """The similarity where the S-curve is steepest, about ``(1 / bands)^(1 / rows)``."""
    return (1.0 / bands) ** (1.0 / rows)


def star_edges(members) -> list[tuple]:
    """The candidate edges of one band group: its lowest member to each other one (a star, so
    a group of ``n`` gives ``n - 1`` edges, not ``n^2 / 2``; the group stays connected)."""
    ordered = sorted(set(members))
    return [(ordered[0], other) for other in ordered[1:]]
