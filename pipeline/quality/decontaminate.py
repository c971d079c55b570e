"""``--decontaminate``: the quality pre-pass's scan of every document for evaluation n-grams.

``Decontaminate`` (PCollection[Chunk] -> chunks, drops):

1. ``EvalNgrams``/``ShardSets``: each evaluation file (``pipeline.quality.eval_sets``), read by
   a worker in pieces, -> its n-gram hashes (``pipeline.quality.ngrams``) by hash shard, merged
   into one ``EvalSet`` per shard (``pipeline.quality.eval_join``). No worker holds them all.
2. ``Probe``/``ByShard``/``JoinShard``/``HitsPerChunk``/``Apply``: every chunk's n-grams meet
   each shard's set in a keyed join; the hits go back to their chunk. ``drop``: a document
   holding any evaluation n-gram drops (``decontaminated``). ``redact``: the character spans
   its matched words cover go with its ``redacted`` decision into the decision file
   (``decision_files.redaction``), for the main pipeline's Parse to cut without any n-gram;
   a document left blank by the cut drops (``decontaminated``). Dropped documents leave the
   chunks, so the pre-pass's dedup and ``--subset_tokens`` totals see only what is kept; a
   redacted document stays, uncut (its hash, for dedup and ``--exclude_docs_from``, is the
   original text's).
3. ``WriteReport``: counts per evaluation set and per subset -> ``decontamination.json``
   (the manifest's ``quality.decontamination``).

Every output depends only on the documents and the evaluation files, never on bundling or
order: the counts are sums, each shard's set a sorted array, the hits those of one whole set.
"""

from __future__ import annotations

import dataclasses
import json

import apache_beam as beam
import numpy as np

from common import storage
from pipeline.quality import decision_files, eval_join, ngrams
from pipeline.quality.eval_filter import BuildFilter, EvalFilter, filter_size
from pipeline.quality.eval_sets import EvalFile
from pipeline.read.stage import Chunk
from schemas.claim import NO_FENCE, Fence

REPORT_NAME = "decontamination.json"
SUSPECTS, CLEAN = "suspects", "clean"  # a chunk's documents the join needs, and the rest
MODES = ("drop", "redact")
SUBSET_COUNTS = ("documents_dropped", "documents_redacted", "documents_emptied", "spans",
                 "characters_removed", "ngrams_matched")


@dataclasses.dataclass(frozen=True)
class DecontaminateOptions:
    files: tuple[EvalFile, ...]
    names: tuple[str, ...]  # the evaluation sets (the --decontaminate sources), by set index
    n: int  # words per n-gram
    mode: str  # "drop" or "redact"
    field: str  # the passages' JSON field (the report's only)
    shards: int = 1  # n-gram hash shards of the join (eval_join.shard_count)


def whole_eval_set(options: DecontaminateOptions) -> ngrams.EvalSet:
    """Every evaluation file's n-grams in one set, read here (the dry run's sample check; the
    pipeline never gathers them)."""
    hashes, masks = [np.empty(0, np.uint64)], [np.empty(0, np.uint64)]
    for file in options.files:
        for value in eval_join.eval_pieces(file, n=options.n, shards=1):
            if not isinstance(value, beam.pvalue.TaggedOutput):
                set_index, piece = value[1]
                hashes.append(piece)
                masks.append(np.full(len(piece), 1 << set_index, dtype=np.uint64))
    return eval_join.union(options.n, np.concatenate(hashes), np.concatenate(masks))


def eval_report(stats, set_ngrams, *, names: tuple[str, ...]) -> dict:
    """The report's ``eval_sets`` section: ``stats`` every file's ``eval_join.FileStats``,
    ``set_ngrams`` (set index, distinct n-grams) summed over the shards."""
    ngram_counts = dict(set_ngrams)
    report = {}
    for index, name in enumerate(names):
        mine = [row for row in stats if row.set_index == index]
        report[name] = {"files": len(mine), "passages": sum(r.passages for r in mine),
                        "short_passages": sum(r.short for r in mine),
                        "ngrams": ngram_counts.get(index, 0)}
    return report


def scan_counts(match: ngrams.Match, *, subset: str, dropped: bool, names) -> list[tuple]:
    """One matched document's rows for the report: ((kind, name, count), value)."""
    rows = [(("set", names[i], "documents"), 1) for i, _ in match.sets]
    rows += [(("set", names[i], "ngrams_matched"), found) for i, found in match.sets]
    kind = "documents_dropped" if dropped else "documents_redacted"
    rows += [(("subset", subset, kind), 1), (("subset", subset, "ngrams_matched"), match.ngrams)]
    if match.spans is not None:
        rows += [(("subset", subset, "spans"), len(match.spans)),
                 (("subset", subset, "characters_removed"), match.removed_chars)]
        if dropped:
            rows.append((("subset", subset, "documents_emptied"), 1))
    return rows


class _ProbeFn(beam.DoFn):
    """Chunk -> (shard, ``eval_join.Probe``) for each shard its n-grams touch, only the
    n-grams the evaluation filter (a side input: one per worker, cached by the runner) may
    hold; the chunk's documents holding such n-grams keyed by chunk (``SUSPECTS``), the
    others as a chunk of their own (``CLEAN``: ``eval_join.split_chunk``)."""

    def __init__(self, *, n: int, shards: int):
        self._n, self._shards = n, shards

    def setup(self):
        self._cache = {}  # word -> hash: speed only

    def process(self, chunk: Chunk, candidates: EvalFilter):
        split = eval_join.split_chunk(chunk, n=self._n, shards=self._shards,
                                      candidates=candidates, cache=self._cache)
        yield from split.probes
        if split.suspect is not None:
            yield beam.pvalue.TaggedOutput(SUSPECTS, (eval_join.chunk_key(chunk), split.suspect))
        if split.clean is not None:  # no evaluation n-gram can be in it: skips the join
            yield beam.pvalue.TaggedOutput(CLEAN, split.clean)


class _ApplyFn(beam.DoFn):
    """(chunk key, {"chunk": [Chunk], "hits": [Hits]}) -> the chunk less its dropped
    documents; decisions (file, (line, reason)) and report rows as tagged outputs."""

    def __init__(self, *, mode: str, names: tuple[str, ...], n: int):
        self._redact = mode == "redact"
        self._names = names
        self._n = n

    def setup(self):
        self._cache = {}  # word -> hash: speed only

    def process(self, keyed):
        _, grouped = keyed
        (chunk,) = grouped["chunk"]
        found_by_doc = eval_join.doc_hits(grouped["hits"])
        kept = []
        for index, doc in enumerate(chunk.documents):
            if index not in found_by_doc:
                kept.append(doc)
                continue
            positions, masks = found_by_doc[index]
            found = ngrams.match_at(doc.text, positions, masks, n=self._n,
                                    redact=self._redact, cache=self._cache)
            dropped = not self._redact or not found.text.strip()
            if dropped:
                decision = doc.line, decision_files.DECONTAMINATED
            else:
                kept.append(doc)  # uncut here; the main pipeline cuts these spans
                decision = decision_files.redaction(doc.line, found.spans)
            yield beam.pvalue.TaggedOutput("decisions", (chunk.file_index, decision))
            for row in scan_counts(found, subset=doc.subset, dropped=dropped, names=self._names):
                yield beam.pvalue.TaggedOutput("counts", row)
        if kept:
            yield dataclasses.replace(chunk, documents=tuple(kept))


def report(*, options: DecontaminateOptions, eval_sets: dict, counts) -> dict:
    """The manifest's ``quality.decontamination`` from the summed rows."""
    eval_sets = {name: dict(row) for name, row in eval_sets.items()}  # inputs stay unchanged
    subsets: dict = {}
    for (kind, name, what), value in sorted(counts):
        if kind == "set":
            eval_sets[name][what] = value
        else:
            subsets.setdefault(name, dict.fromkeys(SUBSET_COUNTS, 0))[what] = value
    for row in eval_sets.values():
        row.setdefault("documents", 0)
        row.setdefault("ngrams_matched", 0)
    return {"mode": options.mode, "ngram": options.n, "field": options.field,
            "normalization": ngrams.NORMALIZATION, "eval_sets": eval_sets,
            "subsets": dict(sorted(subsets.items()))}


def _write(directory: str, name: str, data: bytes, *, fence: Fence = NO_FENCE) -> str:
    path = storage.join(directory, name)
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write(data)
    return path


class Decontaminate(beam.PTransform):
    """PCollection[Chunk] -> {"chunks": the chunks less dropped documents, "drops": (file,
    (line, reason)) and (file, ``decision_files.redaction``)}; writes
    ``decontamination.json`` into ``directory``."""

    def __init__(self, *, options: DecontaminateOptions, directory: str,
                 fence: Fence = NO_FENCE):
        super().__init__()
        self._options = options
        self._directory = directory
        self._fence = fence  # checked before each file is committed

    def expand(self, chunks):
        options, directory, fence = self._options, self._directory, self._fence
        read = (chunks.pipeline
                | "ListEvalFiles" >> beam.Create(options.files)
                | "EvalNgrams" >> beam.FlatMap(eval_join.eval_pieces, n=options.n,
                                               shards=options.shards).with_outputs(
                                                   "stats", main="pieces"))
        candidates = read.pieces | "EvalFilter" >> BuildFilter(
            **filter_size(ngrams=options.shards * eval_join.SHARD_NGRAMS), directory=directory,
            fence=fence)
        shard_sets = read.pieces | "ShardSets" >> beam.CombinePerKey(
            eval_join.ShardSetFn(n=options.n))
        probed = chunks | "Probe" >> beam.ParDo(
            _ProbeFn(n=options.n, shards=options.shards),
            candidates=beam.pvalue.AsSingleton(candidates)).with_outputs(
                SUSPECTS, CLEAN, main="probes")
        hits = ((shard_sets, probed.probes) | "SetsAndProbes" >> beam.Flatten()
                | "ByShard" >> beam.GroupByKey()
                | "JoinShard" >> beam.FlatMap(lambda kv: eval_join.join_shard(kv[1])))
        scanned = ({"chunk": probed[SUSPECTS], "hits": hits}
                   | "HitsPerChunk" >> beam.CoGroupByKey()
                   | "Apply" >> beam.ParDo(_ApplyFn(mode=options.mode, names=options.names,
                                                    n=options.n)).with_outputs(
                       "decisions", "counts", main="chunks"))
        counts = (scanned.counts | "SumCounts" >> beam.CombinePerKey(sum)
                  | "AllCounts" >> beam.combiners.ToList())
        stats = read.stats | "AllStats" >> beam.combiners.ToList()
        set_ngrams = (shard_sets
                      | "SetNgrams" >> beam.FlatMap(lambda kv: eval_join.set_ngram_counts(
                          kv[1], sets=len(options.names)))
                      | "SumSetNgrams" >> beam.CombinePerKey(sum)
                      | "AllSetNgrams" >> beam.combiners.ToList())
        _ = stats | "WriteReport" >> beam.Map(
            lambda rows, ngram_rows, count_rows, sizes: _write(directory, REPORT_NAME, json.dumps(
                {**report(options=options, counts=count_rows,
                          eval_sets=eval_report(rows, ngram_rows, names=options.names)),
                 **sizes},
                sort_keys=True).encode(), fence=fence),
            beam.pvalue.AsSingleton(set_ngrams), beam.pvalue.AsSingleton(counts),
            beam.pvalue.AsSingleton(candidates | "FilterStats" >> beam.Map(EvalFilter.stats)))
        kept = (scanned.chunks, probed[CLEAN]) | "KeptChunks" >> beam.Flatten()
        return {"chunks": kept, "drops": scanned.decisions}


def read_report(directory: str) -> dict:
    path = storage.join(directory, REPORT_NAME)
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        return json.loads(handle.read())

