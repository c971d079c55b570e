"""The quality pre-pass: which documents drop as duplicates or as contamination, and the
per-subset totals a token budget needs. A Beam pipeline of its own, run before the main one
(``pipeline.quality.prepare``), like the tokenizer sample.

1. ``Read`` (``pipeline.read.stage.ReadDocuments``: ReadLines -> [FanOut] -> Parse, as in the
   main pipeline, so that with ``fanout`` any worker hashes and counts any chunk, whatever the
   number of files), then ``KeyByHash``: every selected document of the input -> ``(hash,
   Document)`` (``pipeline.quality.records``: file, line, subset, tokens; tokens counted only
   for ``--subset_tokens``, by the run's encoder backend, loaded once per worker in
   ``DoFn.setup``); every document of
   ``--exclude_docs_from`` -> ``(hash, EXCLUDED)`` (from other splits' hash files, or raw files
   read the same way, with every subset, and hashed). With dedup and no exclusion, only each
   hash's lowest copy per bundle goes on (``hash_groups.LowestCopies``, a bounded table):
   the copies it beats drop here, before any shuffle and without a signature.
2. ``DecideByHash`` (``pipeline.quality.hash_groups``): a shuffle keyed by hash, so no process
   ever holds the set of all hashes. Per hash: excluded -> every document drops
   (``contaminated``); else with ``--dedup=exact`` the lowest (file, line) is kept and the
   others drop (``duplicate``), found streaming over the group (one record held, whatever
   the number of copies). With ``--dedup=near`` the survivors (with
   their MinHash signatures, computed in ``KeyByHash`` for the copies it holds) go on to
   ``pipeline.quality.near_dup.NearDuplicates``: its drops join the exact ones, and its
   kept-count corrections the per-subset sums. With neither ``--dedup`` nor
   ``--exclude_docs_from`` there is nothing to group: no hash is computed, every document
   left by ``--decontaminate``'s scan is kept.
3. The drops, grouped by input file, become one decision file per input file
   (``pipeline.quality.decision_files``, every input file gets one); the kept documents' counts and
   tokens, summed per subset, become ``totals.json``.

Every output is a pure function of the input and the options: grouping by hash and by file
makes it independent of bundling, order, retries and the number of workers.
"""

from __future__ import annotations

import dataclasses
import functools

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from common import storage
from pipeline.config import ReadConfig
from pipeline.quality import decision_files, doc_hash, hash_groups, minhash
from pipeline.quality.decontaminate import Decontaminate
from pipeline.quality.hash_groups import EXCLUDED, KEPT, DecideByHash
from pipeline.quality.near_dup import NearDuplicates
from pipeline.quality.plan import QualityPlan
from pipeline.quality.records import Document, Signed
from pipeline.read.stage import Chunk, ReadDocuments
from schemas.claim import NO_FENCE, Fence

NEAR_DUP = "near_dup"
PRE_DROPS = "pre_drops"
# Hashes held per bundle before the shuffle (a signature, 512 bytes with --minhash_perm=128,
# and a record each): the table's memory is bounded whatever the corpus or the duplication.
HELD_HASHES = 4096


class _KeyByHashFn(beam.DoFn):
    """Chunk -> (hash, Document) per document; with ``minhash`` (``--dedup=near``), (hash,
    Signed) (as plain tuples: ``pipeline.quality.records``). With ``precombine`` only each
    hash's lowest copy per bundle (``hash_groups.LowestCopies``); the others leave as drops
    (tag ``PRE_DROPS``), their signatures never computed."""

    def __init__(self, *, model_path: str | None, encoder: str, num_threads: int,
                 hashed: bool, minhash: minhash.MinHashOptions | None = None,
                 precombine: bool = False):
        self._precombine = precombine
        self._lowest = None
        self._model_path = model_path
        self._encoder_name = encoder
        self._num_threads = num_threads
        self._hashed = hashed
        self._minhash = minhash
        self._backend = None

    def setup(self):
        if self._model_path:
            from tokenizer.backends import open_backend
            from tokenizer.encoder import load_model_bytes

            self._backend = open_backend(self._encoder_name,
                                         model_proto=load_model_bytes(self._model_path),
                                         num_threads=self._num_threads).backend

    def start_bundle(self):
        self._lowest = (hash_groups.LowestCopies(limit=HELD_HASHES) if self._precombine
                        else None)

    def process(self, chunk: Chunk):
        documents = chunk.documents
        counts = ([len(ids) for ids in self._backend.encode_batch(
            [doc.text for doc in documents])] if self._backend else [0] * len(documents))
        for doc, tokens in zip(documents, counts):
            key = doc_hash.doc_hash(doc.text) if self._hashed else b""
            if self._lowest is None:
                yield key, self._row(chunk.file_index, doc, tokens)
                continue
            drop = self._lowest.offer(key, (chunk.file_index, doc.line), functools.partial(
                self._row, chunk.file_index, doc, tokens))
            if drop is not None:
                yield beam.pvalue.TaggedOutput(PRE_DROPS, drop)
            if self._lowest.full:
                yield from self._lowest.flush()

    def finish_bundle(self):
        if self._lowest is not None:
            for element in self._lowest.flush():
                yield WindowedValue(element, MIN_TIMESTAMP, [GlobalWindow()])

    def _row(self, file: int, doc, tokens: int) -> tuple:
        if self._minhash is None:
            return tuple(Document(file=file, line=doc.line, subset=doc.subset, tokens=tokens))
        return tuple(Signed(file=file, line=doc.line, subset=doc.subset, tokens=tokens,
                            signature=minhash.signature(doc.text, options=self._minhash)))


def _excluded_hashes(chunk: Chunk):
    for doc in chunk.documents:
        yield doc_hash.doc_hash(doc.text), EXCLUDED


def _read(files, label: str, *, config: ReadConfig, paths: tuple[str, ...], fanout: bool):
    """The chunks of documents ``config`` selects; dead letters and statistics are the main
    pipeline's to report (and, with ``--on_bad_record=fail``, to fail on), so they are
    skipped here."""
    lenient = dataclasses.replace(config, on_bad_record="skip")
    return (files | label >> ReadDocuments(config=lenient, paths=paths, fanout=fanout))["chunks"]


def _file_hashes(path: str):
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        data = handle.read()
    for digest in doc_hash.iter_digests(data):
        yield digest, EXCLUDED


def _kept(element):
    """(hash, Document) -> (subset, (1, tokens)): a document kept without grouping."""
    _, row = element
    doc = Document._make(row)
    return doc.subset, (1, doc.tokens)


def _sum_pairs(pairs):
    documents = tokens = 0
    for d, t in pairs:
        documents += d
        tokens += t
    return documents, tokens


def _totals(rows) -> dict:
    """Flattened ("subset", (name, (docs, tokens))), ("excluded", n) and ("near_dup", stats)
    rows -> totals.json."""
    subsets, excluded, near = {}, 0, None
    for kind, value in rows:
        if kind == EXCLUDED:
            excluded += value
        elif kind == NEAR_DUP:
            near = value
        else:
            name, (documents, tokens) = value
            subsets[name] = {"documents": documents, "tokens": tokens}
    totals = {"subsets": dict(sorted(subsets.items())), "excluded_hashes": excluded}
    return totals if near is None else {**totals, NEAR_DUP: near}


class FindDrops(beam.PTransform):
    """PCollection[InputFile] -> decision files and ``totals.json`` in ``directory``.

    ``plan``: the stages to run (``pipeline.quality.plan.QualityPlan``: exact and near dedup,
    the ``--exclude_docs_from`` sources, the ``--decontaminate`` scan); ``paths``: every input
    file's path, by file index (``ReadDocuments``); ``fanout``: spread the chunks over all
    workers after reading (``pipeline.launch.beam_options.fanout_enabled``); ``model_path``:
    count tokens of the kept documents (``--subset_tokens``), else None; ``fence``: checked
    before each file is committed (``schemas.claim.Fence``).
    """

    def __init__(self, *, plan: QualityPlan, config: ReadConfig, paths: tuple[str, ...],
                 directory: str, fanout: bool = False, model_path: str | None = None,
                 encoder: str = "auto", num_threads: int = 0, fence: Fence = NO_FENCE):
        super().__init__()
        self._plan = plan
        self._fence = fence
        self._config = config
        self._paths = tuple(paths)
        self._fanout = fanout
        self._directory = directory
        self._model_path = model_path
        self._encoder = encoder
        self._num_threads = num_threads

    def expand(self, files):
        directory, fence = self._directory, self._fence
        chunks = _read(files, "Read", config=self._config, paths=self._paths,
                       fanout=self._fanout)
        plan, scan_drops = self._plan, []
        if plan.decontaminate is not None:  # its drops leave before hashing and counting
            scanned = chunks | "Decontaminate" >> Decontaminate(
                options=plan.decontaminate, directory=directory, fence=fence)
            chunks, scan_drops = scanned["chunks"], [scanned["drops"]]
        # Without exclusions a copy beaten within its bundle is a duplicate whatever the rest
        # holds (with them, every copy of an excluded hash is contaminated instead).
        keyed = chunks | "KeyByHash" >> beam.ParDo(_KeyByHashFn(
            model_path=self._model_path, encoder=self._encoder,
            num_threads=self._num_threads, hashed=plan.groups_by_hash,
            minhash=plan.near.minhash if plan.near else None,
            precombine=plan.exact_dedup and not plan.excludes)).with_outputs(
                PRE_DROPS, main="docs")
        docs, rows = keyed.docs, []
        if plan.groups_by_hash:
            kept, excluded, rows = self._decide(files, docs, [*scan_drops, keyed[PRE_DROPS]])
        else:  # a token budget or the scan alone: every document scanned is kept, no grouping
            kept = docs | "AllKept" >> beam.Map(_kept)
            excluded = files.pipeline | "NoExclusions" >> beam.Create([])
            if scan_drops:
                _write_decisions(files, scan_drops, directory=directory, fence=fence)
        sums = kept | "SumPerSubset" >> beam.CombinePerKey(_sum_pairs)
        return (
            (sums | "AsSubsetRows" >> beam.Map(lambda kv: ("subset", kv)),
             excluded | "AsExcludedRows" >> beam.Map(lambda n: (EXCLUDED, n)), *rows)
            | "AllTotals" >> beam.Flatten()
            | "OneList" >> beam.combiners.ToList()
            | "WriteTotals" >> beam.Map(lambda rows: decision_files.write_totals(
                _totals(rows), directory=directory, fence=fence))
        )

    def _decide(self, files, docs, scan_drops=()):
        p, directory, plan = files.pipeline, self._directory, self._plan
        everything = every_subset(self._config)
        from_files = (p | "ListHashFiles" >> beam.Create(plan.exclusion.hash_files)
                      | "ReadHashFiles" >> beam.FlatMap(_file_hashes))
        # exclusion.resolve numbers the raw files 0, 1, ... in order: their paths by index.
        raw_files = plan.exclusion.raw_files
        from_raw = (_read(p | "ListExcludedFiles" >> beam.Create(raw_files),
                          "ReadExcludedFiles", config=everything,
                          paths=tuple(f.path for f in raw_files), fanout=self._fanout)
                    | "HashExcludedFiles" >> beam.FlatMap(_excluded_hashes))
        excluded = (from_files, from_raw) | "AllExcluded" >> beam.Flatten()
        decided = (docs, excluded) | "ByHash" >> DecideByHash(
            dedup=plan.exact_dedup, near=bool(plan.near),
            exclusions=bool(plan.exclusion))
        drops, kept, rows = [decided.drops, *scan_drops], decided[KEPT], []
        if plan.near:
            survivors = decided[hash_groups.SURVIVORS]
            found = survivors | "NearDuplicates" >> NearDuplicates(options=plan.near)
            drops.append(found["drops"])
            kept = (kept, found["kept"]) | "KeptAfterNear" >> beam.Flatten()
            rows.append(found["stats"] | "AsNearRows" >> beam.Map(lambda s: (NEAR_DUP, s)))
        _write_decisions(files, drops, directory=directory, fence=self._fence)
        return kept, decided[EXCLUDED] | "CountExcluded" >> beam.CombineGlobally(sum), rows


def _write_decisions(files, drops, *, directory: str, fence: Fence):
    """(file, (line, reason)) PCollections -> one decision file per input file, an empty one
    when nothing of it drops."""
    every_file = files | "EveryFile" >> beam.Map(lambda f: (f.index, None))
    return (
        (*drops, every_file)
        | "AllDrops" >> beam.Flatten()
        | "GroupByInputFile" >> beam.GroupByKey()
        | "WriteDecisions" >> beam.MapTuple(lambda index, drops: decision_files.write_decisions(
            (d for d in drops if d is not None), directory=directory, file_index=index,
            fence=fence))
    )


def every_subset(config: ReadConfig) -> ReadConfig:
    """The read options for excluded raw files: every subset (the subset selection is this
    split's, and a document of another subset cannot be in it anyway)."""
    return dataclasses.replace(config, include_subsets=(), exclude_subsets=())
