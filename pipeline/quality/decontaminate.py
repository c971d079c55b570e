"""``--decontaminate``: the quality pre-pass's scan of every document for evaluation n-grams.

``Decontaminate`` (PCollection[Chunk] -> chunks, drops):

1. ``EvalNgrams``: each evaluation file (``pipeline.quality.eval_sets``) -> the n-gram hashes
   of its passages (``pipeline.quality.ngrams``), read by a worker, not by the launcher;
   ``BuildEvalSet`` merges them into one sorted ``EvalSet`` (small: 16 bytes an n-gram),
   handed to every scanning worker as a side input (``AsSingleton``).
2. ``Scan``: every document's n-grams looked up (``np.searchsorted``). ``drop``: a document
   holding any evaluation n-gram drops (``decontaminated``). ``redact``: its overlapping spans
   are marked ``redacted`` for the main pipeline's Parse to cut (``Redactor``: the same
   function on the same set, ``eval_ngrams.bin`` written here), and a document left blank by
   the cut drops (``decontaminated``). Dropped documents leave the chunks, so the pre-pass's
   dedup and ``--subset_tokens`` totals see only what is kept; a redacted document stays, uncut
   (its hash, for dedup and ``--exclude_docs_from``, is the original text's).
3. ``WriteReport``: counts per evaluation set and per subset -> ``decontamination.json``
   (the manifest's ``quality.decontamination``).

Every output depends only on the documents and the evaluation files, never on bundling or
order: the counts are sums, the set a sorted array.
"""

from __future__ import annotations

import dataclasses
import json

import apache_beam as beam
import numpy as np

from common import storage
from pipeline.quality import decision_files
from pipeline.quality import ngrams
from pipeline.quality.eval_sets import EvalFile, read_passages
from pipeline.read.stage import Chunk

EVAL_NGRAMS_NAME = "eval_ngrams.bin"
REPORT_NAME = "decontamination.json"
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


@dataclasses.dataclass(frozen=True)
class FileNgrams:
    """One evaluation file's n-grams, and what its passages gave."""

    set_index: int  # its evaluation set (DecontaminateOptions.names)
    hashes: np.ndarray  # its distinct n-gram hashes, sorted
    passages: int
    short: int  # passages of fewer than n words: no n-gram, skipped


def file_ngrams(file: EvalFile, *, n: int) -> FileNgrams:
    """One evaluation file -> its ``FileNgrams``. A passage of fewer than n words has no n-gram
    and is skipped (counted)."""
    parts, passages, short = [], 0, 0
    cache: dict = {}
    for text in read_passages(file):
        grams = ngrams.text_ngrams(text, n, cache)
        passages += 1
        short += not len(grams)
        parts.append(grams)
    hashes = np.unique(np.concatenate(parts + [np.empty(0, np.uint64)]))
    return FileNgrams(set_index=file.set_index, hashes=hashes, passages=passages, short=short)


def build_eval_set(parts, *, n: int, names: tuple[str, ...]) -> tuple[ngrams.EvalSet, dict]:
    """``file_ngrams`` results -> the EvalSet and the report's ``eval_sets`` section."""
    parts = sorted(parts, key=lambda part: part.set_index)
    report = {}
    for index, name in enumerate(names):
        mine = [part for part in parts if part.set_index == index]
        distinct = np.unique(np.concatenate([p.hashes for p in mine]
                                            + [np.empty(0, np.uint64)]))
        report[name] = {"files": len(mine), "passages": sum(p.passages for p in mine),
                        "short_passages": sum(p.short for p in mine), "ngrams": len(distinct)}
    return ngrams.EvalSet.build(((p.set_index, p.hashes) for p in parts), n=n), report


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


class _ScanFn(beam.DoFn):
    """(Chunk, EvalSet) -> the chunk less its dropped documents; decisions (file, (line,
    reason)) and report rows as tagged outputs."""

    def __init__(self, *, mode: str, names: tuple[str, ...]):
        self._redact = mode == "redact"
        self._names = names

    def setup(self):
        self._cache = {}  # word -> hash: speed only

    def process(self, chunk: Chunk, eval_set: ngrams.EvalSet):
        kept = []
        for doc in chunk.documents:
            found = ngrams.match(doc.text, eval_set, redact=self._redact, cache=self._cache)
            if found is None:
                kept.append(doc)
                continue
            dropped = not self._redact or not found.text.strip()
            if not dropped:
                kept.append(doc)  # cut by the main pipeline, from the same set
            reason = decision_files.DECONTAMINATED if dropped else decision_files.REDACTED
            yield beam.pvalue.TaggedOutput("decisions", (chunk.file_index, (doc.line, reason)))
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


def _write(directory: str, name: str, data: bytes) -> str:
    path = storage.join(directory, name)
    with storage.atomic_open(path, "wb") as handle:
        handle.write(data)
    return path


class Decontaminate(beam.PTransform):
    """PCollection[Chunk] -> {"chunks": the chunks less dropped documents, "drops": (file,
    (line, reason))}; writes ``decontamination.json`` (and, to redact,
    ``eval_ngrams.bin``) into ``directory``."""

    def __init__(self, *, options: DecontaminateOptions, directory: str):
        super().__init__()
        self._options = options
        self._directory = directory

    def expand(self, chunks):
        options, directory = self._options, self._directory
        built = (chunks.pipeline
                 | "ListEvalFiles" >> beam.Create(options.files)
                 | "EvalNgrams" >> beam.Map(file_ngrams, n=options.n)
                 | "AllEvalFiles" >> beam.combiners.ToList()
                 | "BuildEvalSet" >> beam.Map(build_eval_set, n=options.n, names=options.names))
        eval_set = built | "EvalSetOnly" >> beam.Map(lambda pair: pair[0])
        if options.mode == "redact":
            _ = eval_set | "WriteEvalSet" >> beam.Map(
                lambda s: _write(directory, EVAL_NGRAMS_NAME, s.to_bytes()))
        scanned = chunks | "Scan" >> beam.ParDo(
            _ScanFn(mode=options.mode, names=options.names),
            beam.pvalue.AsSingleton(eval_set)).with_outputs("decisions", "counts", main="chunks")
        counts = (scanned.counts | "SumCounts" >> beam.CombinePerKey(sum)
                  | "AllCounts" >> beam.combiners.ToList())
        _ = built | "WriteReport" >> beam.Map(
            lambda pair, rows: _write(directory, REPORT_NAME, json.dumps(
                report(options=options, eval_sets=pair[1], counts=rows),
                sort_keys=True).encode()),
            beam.pvalue.AsSingleton(counts))
        return {"chunks": scanned.chunks, "drops": scanned.decisions}


def read_report(directory: str) -> dict:
    path = storage.join(directory, REPORT_NAME)
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        return json.loads(handle.read())


class Redactor:
    """The main pipeline's cut: loads the pre-pass's ``eval_ngrams.bin`` once (``load``, from a
    ``DoFn.setup``) and cuts a ``redacted`` document's spans (``redact``)."""

    def __init__(self, eval_set: ngrams.EvalSet):
        self._eval_set = eval_set
        self._cache: dict = {}

    @classmethod
    def load(cls, directory: str) -> "Redactor":
        path = storage.join(directory, EVAL_NGRAMS_NAME)
        fs, stripped = storage.filesystem(path)
        with fs.open(stripped, "rb") as handle:
            return cls(ngrams.EvalSet.from_bytes(handle.read()))

    def redact(self, text: str) -> str:
        found = ngrams.match(text, self._eval_set, redact=True, cache=self._cache)
        return text if found is None else found.text
