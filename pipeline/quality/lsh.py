"""LSH banding of MinHash signatures (Leskovec, Rajaraman, Ullman, "Mining of Massive
Datasets", ch. 3.4): documents that agree on every row of some band become candidates, each
with its next ``NEIGHBOURS`` documents of that band key in (file, line) order.

A signature of ``perm`` values splits into ``bands`` bands of ``rows = perm // bands`` values.
Two documents of Jaccard similarity ``s`` share at least one band with probability
``1 - (1 - s^rows)^bands`` (``candidate_probability``), an S-curve that rises around
``(1 / bands)^(1 / rows)`` (``threshold``). Each band's key is the band index and an 8-byte
BLAKE2b digest of its values, so the documents of one key meet in one group of a shuffle and
no worker ever holds all signatures.
"""

from __future__ import annotations

import hashlib

import numpy as np

KEY_DIGEST_BYTES = 8


def rows_per_band(*, perm: int, bands: int) -> int:
    if bands < 1 or perm % bands:
        raise ValueError(f"{perm} permutations do not split into {bands} equal bands")
    return perm // bands


def band_digests(signature: bytes, *, bands: int) -> list[bytes]:
    """The ``KEY_DIGEST_BYTES``-byte BLAKE2b digest of each band's values, in band order."""
    width = len(signature) // bands
    if width * bands != len(signature):
        raise ValueError(f"a {len(signature)}-byte signature does not split into {bands} bands")
    return [hashlib.blake2b(signature[index * width:(index + 1) * width],
                            digest_size=KEY_DIGEST_BYTES).digest() for index in range(bands)]


def band_keys(signature: bytes, *, bands: int) -> list[bytes]:
    """One key per band: 2 bytes of band index, then the digest of the band's values."""
    return [index.to_bytes(2, "big") + digest
            for index, digest in enumerate(band_digests(signature, bands=bands))]


def candidate_probability(similarity: float, *, rows: int, bands: int) -> float:
    """The chance two documents of Jaccard ``similarity`` share at least one band."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def threshold(*, rows: int, bands: int) -> float:
    """The similarity where the S-curve is steepest, about ``(1 / bands)^(1 / rows)``."""
    return (1.0 / bands) ** (1.0 / rows)


NEIGHBOURS = 1


def neighbour_edges(members, *, neighbours: int = NEIGHBOURS) -> list[tuple]:
    """The candidate edges of one band group: in (file, line) order, each member to its next
    ``neighbours`` members (``neighbours * n`` edges at most, not ``n^2 / 2``; the group stays
    connected). A chain of revisions in one group keeps its links: a star from the lowest
    member would pair it with revisions too far from it to verify, and cut the chain."""
    ordered = sorted(set(members))
    return [(ordered[i], ordered[j]) for i in range(len(ordered))
            for j in range(i + 1, min(i + 1 + neighbours, len(ordered)))]


def band_columns(docs, *, bands: int) -> dict:
    """``Signed`` documents (``pipeline.quality.records``) -> numpy columns, one row per
    (document, band): ``band`` (index), ``digest`` (``band_keys``'s digest as an integer),
    ``file``, ``line``."""
    digests = [digest for doc in docs for digest in band_digests(doc.signature, bands=bands)]
    count = len(docs)
    return {"band": np.tile(np.arange(bands, dtype=np.uint16), count),
            "digest": np.frombuffer(b"".join(digests), dtype=">u8").astype(np.uint64),
            "file": np.repeat(np.array([doc.file for doc in docs], dtype=np.int64), bands),
            "line": np.repeat(np.array([doc.line for doc in docs], dtype=np.int64), bands)}


def shard_columns(columns: dict, *, shards: int):
    """Split ``band_columns`` by ``digest % shards``: every row of one band key in one shard."""
    shard = columns["digest"] % np.uint64(shards)
    order = np.argsort(shard, kind="stable")
    shard = shard[order]
    starts = np.flatnonzero(np.r_[True, shard[1:] != shard[:-1]])
    ends = np.r_[starts[1:], len(shard)]
    for start, end in zip(starts.tolist(), ends.tolist()):
        rows = order[start:end]
        yield int(shard[start]), {name: values[rows] for name, values in columns.items()}


def sorted_neighbour_edges(parts, *, neighbours: int = NEIGHBOURS) -> set[tuple]:
    """The candidate edges of some ``band_columns`` parts holding whole band keys, as
    ((file, line), (file, line)) pairs: per band key, each (file, line) to its next
    ``neighbours`` ones (``neighbour_edges`` of every band group at once, by one numpy sort
    instead of a shuffle group per key; the edges come out as columns, never a list per key)."""
    parts = list(parts)
    if not parts:
        return set()
    band, digest, file, line = (np.concatenate([p[name] for p in parts])
                                for name in ("band", "digest", "file", "line"))
    order = np.lexsort((line, file, digest, band))
    band, digest, file, line = band[order], digest[order], file[order], line[order]
    change = np.ones(len(band), dtype=bool)
    change[1:] = (band[1:] != band[:-1]) | (digest[1:] != digest[:-1])
    run = np.cumsum(change)  # each row's band key, numbered in sorted order
    edges: set = set()
    for step in range(1, neighbours + 1):
        lower = np.flatnonzero(run[:-step] == run[step:])
        upper = lower + step
        edges.update(zip(zip(file[lower].tolist(), line[lower].tolist()),
                         zip(file[upper].tolist(), line[upper].tolist())))
    return edges
