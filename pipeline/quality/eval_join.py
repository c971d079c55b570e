"""``--decontaminate``'s keyed join: evaluation n-grams and documents' n-grams meet per hash
shard, so no worker holds the whole evaluation set.

Every n-gram hash (``pipeline.quality.ngrams``) belongs to shard ``hash % shards``
(``shard_of``); ``shards`` comes from the evaluation files' size (``shard_count``: about
``SHARD_NGRAMS`` distinct n-grams a shard, ~16 MiB). Then:

1. ``eval_pieces``: an evaluation file, read in pieces of at most ``PIECE_NGRAMS`` n-grams,
   -> (shard, (set index, hashes)); ``ShardSetFn`` merges a shard's pieces into one
   ``EvalSet`` (its distinct hashes and set bitmasks).
2. ``chunk_probes``: a chunk's documents' n-grams -> one ``Probe`` per shard they touch,
   only the n-grams the evaluation sets' Bloom filter (``pipeline.quality.eval_filter``, built
   from the same pieces) may hold: most of a document's n-grams are in no evaluation set, and
   leaving them out of the shuffle changes no hit.
3. ``join_shard``: a shard's ``EvalSet`` and its probes -> the ``Hits`` per chunk: which
   n-gram positions of which documents the evaluation sets hold, and in which sets.

A shard's values are read twice (the set first, then the probes streamed against it), so a
worker holds one shard's set and one probe. The hits per chunk are the positions ``ngrams.match``
finds with the whole set (``ngrams.match_at`` turns them into the same ``Match``):

    >>> shard_of(np.array([7, 8, 9], dtype=np.uint64), shards=4).tolist()
    [3, 0, 1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import apache_beam as beam
import numpy as np

from common import storage
from pipeline.quality import ngrams
from pipeline.quality.eval_filter import EvalFilter
from pipeline.quality.eval_sets import EvalFile, read_passages
from pipeline.read.stage import Chunk

SHARD_NGRAMS = 1 << 20  # distinct evaluation n-grams a shard aims at (16 bytes each)
PIECE_NGRAMS = 1 << 20  # evaluation n-grams read before a file's piece moves on
MAX_SHARDS = 1 << 14
# A compressed evaluation file's bytes -> its n-grams, high on purpose (more, smaller shards):
# JSON Lines text compresses ~4x and holds a word every ~6 bytes.
_NGRAMS_PER_FILE_BYTE = 1


def shard_count(eval_bytes: int) -> int:
    """Shards for evaluation files of ``eval_bytes`` bytes (as stored): at least 1.

    >>> shard_count(0), shard_count(3 << 20), shard_count(1 << 40)
    (1, 3, 16384)
    """
    wanted = -(-eval_bytes * _NGRAMS_PER_FILE_BYTE // SHARD_NGRAMS)
    return max(1, min(MAX_SHARDS, wanted))


def files_bytes(files: Iterable[EvalFile]) -> int:
    """The evaluation files' size as stored (read from the file system, no data read)."""
    total = 0
    for file in files:
        fs, stripped = storage.filesystem(file.path)
        total += int(fs.size(stripped) or 0)
    return total


def shard_of(hashes: np.ndarray, *, shards: int) -> np.ndarray:
    """Each n-gram hash's shard (the hashes are mixed, so the low bits spread evenly)."""
    return (hashes % np.uint64(shards)).astype(np.int64)


def _by_shard(keys: np.ndarray, shards: int, *columns: np.ndarray) -> Iterator[tuple]:
    """(shard, *columns restricted to it) for every shard present, by shard."""
    which = shard_of(keys, shards=shards)
    order = np.argsort(which, kind="stable")
    which = which[order]
    starts = np.flatnonzero(np.concatenate(([True], which[1:] != which[:-1]))) if len(
        which) else np.empty(0, np.int64)
    ends = np.append(starts[1:], len(which))
    for start, end in zip(starts.tolist(), ends.tolist()):
        picked = order[start:end]
        yield (int(which[start]), *(column[picked] for column in columns))


@dataclasses.dataclass(frozen=True)
class FileStats:
    """What one evaluation file's passages gave (the report's ``eval_sets`` rows)."""

    set_index: int
    passages: int
    short: int  # passages of fewer than n words: no n-gram, skipped


def eval_pieces(file: EvalFile, *, n: int, shards: int,
                piece_ngrams: int = PIECE_NGRAMS) -> Iterator:
    """One evaluation file -> ``(shard, (set index, distinct hashes))`` pieces, then its
    ``FileStats`` (tagged ``stats``). Memory: one piece, whatever the file's size."""
    parts, held, passages, short = [], 0, 0, 0
    cache: dict = {}

    def flush():
        hashes = np.unique(np.concatenate(parts))
        for shard, mine in _by_shard(hashes, shards, hashes):
            yield shard, (file.set_index, mine)

    for text in read_passages(file):
        grams = ngrams.text_ngrams(text, n, cache)
        passages += 1
        short += not len(grams)
        parts.append(grams)
        held += len(grams)
        if held >= piece_ngrams:
            yield from flush()
            parts, held = [], 0
    if held:
        yield from flush()
    yield beam.pvalue.TaggedOutput("stats", FileStats(file.set_index, passages, short))


def union(n: int, hashes: np.ndarray, masks: np.ndarray) -> ngrams.EvalSet:
    """Hashes with set bitmasks, repeats allowed -> an ``EvalSet`` (distinct, masks OR-ed)."""
    order = np.argsort(hashes, kind="stable")
    hashes, masks = hashes[order], masks[order]
    if not len(hashes):
        return ngrams.EvalSet(n, hashes, masks)
    starts = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
    return ngrams.EvalSet(n, hashes[starts], np.bitwise_or.reduceat(masks, starts))


class ShardSetFn(beam.CombineFn):
    """A shard's pieces (set index, hashes) -> its ``EvalSet``. The accumulator is the set so
    far plus pieces not yet merged, merged once they outgrow it (sorting stays O(N log N))."""

    def __init__(self, *, n: int):
        self._n = n

    def create_accumulator(self):
        return union(self._n, np.empty(0, np.uint64), np.empty(0, np.uint64)), [], 0

    def _compact(self, accumulator):
        merged, pending, _ = accumulator
        if not pending:
            return accumulator
        hashes = np.concatenate([merged.hashes] + [h for h, _ in pending])
        masks = np.concatenate([merged.sets] + [m for _, m in pending])
        return union(self._n, hashes, masks), [], 0

    def add_input(self, accumulator, piece):
        merged, pending, held = accumulator
        set_index, hashes = piece
        pending = pending + [(hashes, np.full(len(hashes), 1 << set_index, dtype=np.uint64))]
        held += len(hashes)
        accumulator = merged, pending, held
        return self._compact(accumulator) if held >= max(len(merged.hashes), 1 << 16) \
            else accumulator

    def merge_accumulators(self, accumulators):
        accumulators = list(accumulators)
        merged = [a[0] for a in accumulators]
        pending = [(m.hashes, m.sets) for m in merged] + [p for a in accumulators for p in a[1]]
        return self._compact((self.create_accumulator()[0], pending, 0))

    def extract_output(self, accumulator):
        return self._compact(accumulator)[0]


def set_ngram_counts(eval_set: ngrams.EvalSet, *, sets: int) -> list[tuple[int, int]]:
    """(set index, distinct n-grams of that set here) for each of ``sets`` sets; the shards are
    disjoint, so the sums over shards are each set's distinct n-grams."""
    return [(i, int(((eval_set.sets >> np.uint64(i)) & np.uint64(1)).sum()))
            for i in range(sets)]


@dataclasses.dataclass(frozen=True)
class Probe:
    """One chunk's n-grams that fall in one shard: for each, its document (index in the
    chunk), its position (first word) and its hash."""

    key: tuple[int, int]  # the chunk's (file_index, chunk_index)
    docs: np.ndarray  # int32
    positions: np.ndarray  # int32
    hashes: np.ndarray  # uint64


@dataclasses.dataclass(frozen=True)
class Hits:
    """The n-grams of one chunk found in one shard's evaluation set (columns as ``Probe``'s,
    ``masks`` each one's set bitmask)."""

    docs: np.ndarray
    positions: np.ndarray
    masks: np.ndarray


def chunk_key(chunk: Chunk) -> tuple[int, int]:
    return chunk.file_index, chunk.chunk_index


def chunk_probes(chunk: Chunk, *, n: int, shards: int, cache: dict | None = None,
                 candidates: EvalFilter | None = None) -> Iterator[tuple[int, Probe]]:
    """A chunk -> (shard, ``Probe``) for every shard its documents' n-grams touch; with
    ``candidates`` (``eval_filter``), only the n-grams it may hold: the others cannot be
    found in any shard, so leaving them out changes no hit."""
    grams = [ngrams.text_ngrams(doc.text, n, cache) for doc in chunk.documents]
    keep = None if candidates is None else [candidates.may_contain(g) for g in grams]
    yield from _probes(chunk_key(chunk), grams, keep, shards=shards)


def _probes(key, grams: list, keep: list | None, *, shards: int) -> Iterator[tuple[int, Probe]]:
    """Documents' n-gram hashes (``keep``: a mask of those to probe per document, None: all)
    -> (shard, ``Probe``) for every shard they touch; documents numbered as in ``grams``."""
    hashes = np.concatenate(grams + [np.empty(0, np.uint64)])
    docs = np.repeat(np.arange(len(grams), dtype=np.int32), [len(g) for g in grams])
    positions = np.concatenate([np.arange(len(g), dtype=np.int32) for g in grams]
                               + [np.empty(0, np.int32)])
    if keep is not None:
        mask = np.concatenate(keep + [np.empty(0, bool)])
        docs, positions, hashes = docs[mask], positions[mask], hashes[mask]
    for shard, mine_docs, mine_positions, mine_hashes in _by_shard(hashes, shards, docs,
                                                                   positions, hashes):
        yield shard, Probe(key, mine_docs, mine_positions, mine_hashes)


@dataclasses.dataclass(frozen=True)
class Split:
    """A chunk split by the filter: ``suspect`` its documents with an n-gram the filter may
    hold (None: none), the only ones the join needs; ``clean`` the others (None: none), which
    no evaluation n-gram can be in; ``probes`` the suspects' candidates, documents numbered as
    in ``suspect``."""

    suspect: Chunk | None
    clean: Chunk | None
    probes: list


def split_chunk(chunk: Chunk, *, n: int, shards: int, candidates: EvalFilter,
                cache: dict | None = None) -> Split:
    """A chunk -> its ``Split`` (both parts keep the chunk's key and their documents' order),
    so that only the suspects and their candidate n-grams are shuffled to the join.

    >>> from pipeline.read.parse import Document
    >>> docs = tuple(Document(line=i, text=t, subset="A", text_bytes=len(t))
    ...              for i, t in enumerate(["a b c", "x y z"], 1))
    >>> bloom = EvalFilter.empty(size_bits=1 << 10, probes=3)
    >>> bloom.add(ngrams.text_ngrams("x y z", 2))
    >>> split = split_chunk(Chunk(0, 0, docs), n=2, shards=1, candidates=bloom)
    >>> [d.line for d in split.suspect.documents], [d.line for d in split.clean.documents]
    ([2], [1])
    """
    grams = [ngrams.text_ngrams(doc.text, n, cache) for doc in chunk.documents]
    keep = [candidates.may_contain(g) for g in grams]
    suspect = [i for i, mask in enumerate(keep) if mask.any()]
    clean = [i for i, mask in enumerate(keep) if not mask.any()]

    def part(indices):
        return dataclasses.replace(chunk, documents=tuple(chunk.documents[i] for i in indices)
                                   ) if indices else None

    probes = list(_probes(chunk_key(chunk), [grams[i] for i in suspect],
                          [keep[i] for i in suspect], shards=shards))
    return Split(suspect=part(suspect), clean=part(clean), probes=probes)


def join_shard(values: Iterable) -> Iterator[tuple[tuple[int, int], Hits]]:
    """A shard's values (its ``EvalSet``, if any evaluation n-gram fell here, and its
    ``Probe``s, in any order) -> (chunk key, ``Hits``) for each probe that found any. Reads
    ``values`` twice: once for the set, once streaming the probes."""
    eval_set = next((v for v in values if isinstance(v, ngrams.EvalSet)), None)
    if eval_set is None:
        return
    for probe in values:
        if isinstance(probe, Probe):
            found, masks = eval_set.find(probe.hashes)
            if len(found):
                yield probe.key, Hits(probe.docs[found], probe.positions[found], masks)


def doc_hits(hits: Iterable[Hits]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """A chunk's ``Hits`` (from every shard) -> document index -> (positions, masks)."""
    hits = list(hits)
    docs = np.concatenate([h.docs for h in hits] + [np.empty(0, np.int32)])
    positions = np.concatenate([h.positions for h in hits] + [np.empty(0, np.int32)])
    masks = np.concatenate([h.masks for h in hits] + [np.empty(0, np.uint64)])
    return {doc: (positions[docs == doc].astype(np.int64), masks[docs == doc])
            for doc in sorted(set(docs.tolist()))}
