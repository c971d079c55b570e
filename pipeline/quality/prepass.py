"""The quality pre-pass: which documents drop as duplicates or as contamination, and the
per-subset totals a token budget needs. A Beam pipeline of its own, run before the main one
(``pipeline.quality.prepare``), like the tokenizer sample.

1. ``KeyByHash``: every selected document of the input -> ``(hash, (file, line, subset,
   tokens))`` (tokens counted only for ``--subset_tokens``, by the run's encoder backend,
   loaded once per worker in ``DoFn.setup``); every document of ``--exclude_docs_from`` ->
   ``(hash, EXCLUDED)`` (from other splits' hash files, or raw files read and hashed).
2. ``CoGroupByKey`` by hash: a shuffle keyed by hash, so no process ever holds the set of
   all hashes. Per hash: excluded -> every document drops (``contaminated``); else with
   ``--dedup=exact`` the lowest (file, line) is kept and the others drop (``duplicate``),
   found in one streaming pass over the group.
3. The drops, grouped by input file, become one decision file per input file
   (``pipeline.quality.decisions``, every input file gets one); the kept documents' counts and
   tokens, summed per subset, become ``totals.json``.

Every output is a pure function of the input and the options: grouping by hash and by file
makes it independent of bundling, order, retries and the number of workers.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from common import storage
from pipeline.config import ReadConfig
from pipeline.quality import decisions as quality_files
from pipeline.quality import doc_hash
from pipeline.read.stage import Chunk, iter_documents, read_file

EXCLUDED = "excluded"
KEPT = "kept"


class _KeyByHashFn(beam.DoFn):
    """InputFile -> (hash, (file, line, subset, tokens)) per selected document."""

    def __init__(self, *, config: ReadConfig, model_path: str | None, encoder: str,
                 num_threads: int, hashed: bool):
        self._config = config
        self._model_path = model_path
        self._encoder_name = encoder
        self._num_threads = num_threads
        self._hashed = hashed
        self._backend = None

    def setup(self):
        if self._model_path:
            from tokenizer.backends import open_backend
            from tokenizer.encoder import load_model_bytes

            self._backend = open_backend(self._encoder_name,
                                         model_proto=load_model_bytes(self._model_path),
                                         num_threads=self._num_threads).backend

    def process(self, file):
        for item in read_file(file, config=self._config):
            if not isinstance(item, Chunk):
                continue  # dead letters and statistics are the main pipeline's to report
            documents = item.documents
            counts = ([len(ids) for ids in self._backend.encode_batch(
                [doc.text for doc in documents])] if self._backend else [0] * len(documents))
            for doc, tokens in zip(documents, counts):
                key = doc_hash.doc_hash(doc.text) if self._hashed else b""
                yield key, (file.index, doc.line, doc.subset, tokens)


def _raw_hashes(file, config: ReadConfig):
    for doc in iter_documents(file, config=config):
        yield doc_hash.doc_hash(doc.text), EXCLUDED


def _file_hashes(path: str):
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        data = handle.read()
    for digest in doc_hash.iter_digests(data):
        yield digest, EXCLUDED


class _DecideFn(beam.DoFn):
    """(hash, {docs, excluded}) -> drops (file, (line, reason)); kept (subset, (1, tokens))."""

    def __init__(self, *, dedup: bool):
        self._dedup = dedup

    def process(self, element):
        _, groups = element
        excluded = any(True for _ in groups[EXCLUDED])
        if excluded:
            yield beam.pvalue.TaggedOutput(EXCLUDED, 1)
        best = None
        for doc in groups["docs"]:
            if excluded:
                yield doc[0], (doc[1], quality_files.CONTAMINATED)
            elif not self._dedup:
                yield beam.pvalue.TaggedOutput(KEPT, (doc[2], (1, doc[3])))
            elif best is None:
                best = doc
            elif doc[:2] < best[:2]:  # a lower (file, line): it is the one kept
                yield best[0], (best[1], quality_files.DUPLICATE)
                best = doc
            else:
                yield doc[0], (doc[1], quality_files.DUPLICATE)
        if best is not None:
            yield beam.pvalue.TaggedOutput(KEPT, (best[2], (1, best[3])))


def _sum_pairs(pairs):
    documents = tokens = 0
    for d, t in pairs:
        documents += d
        tokens += t
    return documents, tokens


def _totals(rows) -> dict:
    """Flattened ("subset", (name, (docs, tokens))) and ("excluded", n) rows -> totals.json."""
    subsets, excluded = {}, 0
    for kind, value in rows:
        if kind == EXCLUDED:
            excluded += value
        else:
            name, (documents, tokens) = value
            subsets[name] = {"documents": documents, "tokens": tokens}
    return {"subsets": dict(sorted(subsets.items())), "excluded_hashes": excluded}


class FindDrops(beam.PTransform):
    """PCollection[InputFile] -> decision files and ``totals.json`` in ``directory``.

    ``hash_files``/``raw_files``: the ``--exclude_docs_from`` sources
    (``pipeline.quality.exclusion``); ``dedup``: keep only the first of equal documents;
    ``model_path``: count tokens of the kept documents (``--subset_tokens``), else None.
    """

    def __init__(self, *, config: ReadConfig, directory: str, dedup: bool,
                 hash_files: tuple[str, ...] = (), raw_files: tuple = (),
                 model_path: str | None = None, encoder: str = "auto", num_threads: int = 0):
        super().__init__()
        self._config = config
        self._directory = directory
        self._dedup = dedup
        self._hash_files = tuple(hash_files)
        self._raw_files = tuple(raw_files)
        self._model_path = model_path
        self._encoder = encoder
        self._num_threads = num_threads

    @property
    def _decides(self) -> bool:
        return self._dedup or bool(self._hash_files or self._raw_files)

    def expand(self, files):
        directory = self._directory
        docs = files | "KeyByHash" >> beam.ParDo(_KeyByHashFn(
            config=self._config, model_path=self._model_path, encoder=self._encoder,
            num_threads=self._num_threads, hashed=self._decides))
        if self._decides:
            kept, excluded = self._decide(files, docs)
        else:  # a token budget alone: every document is kept, nothing to group
            kept = docs | "AllKept" >> beam.Map(lambda kv: (kv[1][2], (1, kv[1][3])))
            excluded = files.pipeline | "NoExclusions" >> beam.Create([])
        sums = kept | "SumPerSubset" >> beam.CombinePerKey(_sum_pairs)
        return (
            (sums | "AsSubsetRows" >> beam.Map(lambda kv: ("subset", kv)),
             excluded | "AsExcludedRows" >> beam.Map(lambda n: (EXCLUDED, n)))
            | "AllTotals" >> beam.Flatten()
            | "OneList" >> beam.combiners.ToList()
            | "WriteTotals" >> beam.Map(lambda rows: quality_files.write_totals(
                _totals(rows), directory=directory))
        )

    def _decide(self, files, docs):
        p, directory = files.pipeline, self._directory
        everything = every_subset(self._config)
        from_files = (p | "ListHashFiles" >> beam.Create(self._hash_files)
                      | "ReadHashFiles" >> beam.FlatMap(_file_hashes))
        from_raw = (p | "ListExcludedFiles" >> beam.Create(self._raw_files)
                    | "HashExcludedFiles" >> beam.FlatMap(_raw_hashes, config=everything))
        excluded = (from_files, from_raw) | "AllExcluded" >> beam.Flatten()
        decided = (
            {"docs": docs, EXCLUDED: excluded}
            | "GroupByHash" >> beam.CoGroupByKey()
            | "Decide" >> beam.ParDo(_DecideFn(dedup=self._dedup)).with_outputs(
                KEPT, EXCLUDED, main="drops")
        )
        # Every input file gets a decision file, an empty one when nothing of it drops.
        every_file = files | "EveryFile" >> beam.Map(lambda f: (f.index, None))
        (
            (decided.drops, every_file)
            | "AllDrops" >> beam.Flatten()
            | "GroupByInputFile" >> beam.GroupByKey()
            | "WriteDecisions" >> beam.MapTuple(lambda index, drops: quality_files.write_decisions(
                (d for d in drops if d is not None), directory=directory, file_index=index))
        )
        return decided[KEPT], decided[EXCLUDED] | "CountExcluded" >> beam.CombineGlobally(sum)


def every_subset(config: ReadConfig) -> ReadConfig:
    """The read options for excluded raw files: every subset (the subset selection is this
    split's, and a document of another subset cannot be in it anyway)."""
    return dataclasses.replace(config, include_subsets=(), exclude_subsets=())
