"""Stage 5, Manifest: merge every stage's statistics and commit ``manifest.json`` last.

The manifest is built from the data itself (shard infos, per-chunk and per-file statistics
that flow through the pipeline, merged into a ``pipeline.dataset.statistics.Summary``), not
from runner metrics, so a retried bundle cannot count
twice. It is written by a single element after every shard has been committed, validated
against ``schemas/manifest.schema.json``, atomically; not at all if the counts of one stage and
the next disagree (a chunk lost or repeated on the way): ``check_lines_accounted`` (Read's lines
against Parse's), then ``check_documents_accounted`` (Parse's documents against the parts',
the parts' records against the shards').
"""

from __future__ import annotations

import collections
import datetime

import apache_beam as beam

from common import storage
from common.errors import DataError, PilepackError
from pipeline.config import PipelineConfig
from pipeline.dataset.filter_section import filter_section
from pipeline.dataset.format_sections import files_problem, format_sections
from pipeline.dataset.quality_sections import quality_sections
from pipeline.dataset.software import software_versions
from pipeline.dataset.statistics import FileParts, Summary
from pipeline.quality.decision_files import QUALITY_DIR
from pipeline.tokenize import histogram
from pipeline.tokenize.subset_stats import summed
from pipeline.write.shard_plan import PARTS_DIR
from schemas import manifest as manifest_schema
from schemas.claim import check_held
from schemas.dataset_spec import DatasetSpec
from tokenizer.guard import EncodeStats


class TooManyBadRecords(DataError):
    """More rejected records than --max_bad_fraction allows; no manifest is written."""


class LinesUnaccounted(PilepackError):
    """An input file's lines, as Read split them, do not match what was counted downstream:
    a chunk was lost or counted twice on the way (a runner dropping or repeating bundles)."""


class DocumentsUnaccounted(PilepackError):
    """The documents (or records) that reached the part files (or shards) are not those passed
    on to them: a chunk was lost or written twice after Parse (in Tokenize, Pack, WriteParts)."""


class _SummaryFn(beam.CombineFn):
    def create_accumulator(self):
        return Summary()

    def add_input(self, summary, item):
        summary.add(item)
        return summary

    def merge_accumulators(self, summaries):
        summaries = iter(summaries)
        first = next(summaries)
        for other in summaries:
            first.merge(other)
        return first

    def extract_output(self, summary):
        return summary


def accounting(summary: Summary) -> dict:
    filtered = collections.Counter()
    rejected = collections.Counter()
    for stats in summary.files:
        filtered.update(stats.filtered)
        rejected.update(stats.rejected)
    written = sum(stats.documents for stats in summary.files)
    # Read's own count (its lines, and the rejections of a stream, which are not lines), not
    # the sum of the others: verify's "adds up" then checks two independent counts.
    read = sum(stats.lines + stats.stream_errors for stats in summary.files)
    return {"read": read, "written": written, "filtered": dict(sorted(filtered.items())),
            "rejected": dict(sorted(rejected.items()))}


def unaccounted_files(summary: Summary, *, inputs: list) -> list[tuple[str, int, int | None]]:
    """(path, lines Read split, lines counted downstream or None if no count of Read's
    arrived) of every input file where the two differ, in input order. Downstream = written +
    filtered (blank lines included) + rejected, less the rejections of the stream itself."""
    by_index = {stats.file_index: stats for stats in summary.files}
    wrong = []
    for file in inputs:
        stats = by_index.get(file.index)
        if stats is None:  # not even Read's own count of its lines arrived
            wrong.append((file.path, None, 0))
        elif stats.lines != stats.accounted_lines():
            wrong.append((file.path, stats.lines, stats.accounted_lines()))
    return wrong


def check_lines_accounted(summary: Summary, *, inputs: list) -> None:
    """Raise LinesUnaccounted, naming the first file and both counts, unless every line that
    Read split was counted exactly once downstream (called before anything is committed)."""
    wrong = unaccounted_files(summary, inputs=inputs)
    if not wrong:
        return
    path, lines, counted = wrong[0]
    read = "no count of its lines from Read" if lines is None else f"Read split {lines:,} lines"
    others = f" (and {len(wrong) - 1} other file(s))" if len(wrong) > 1 else ""
    raise LinesUnaccounted(
        f"input {path}{others}: {read}, but {counted:,} were counted after the split (written "
        "+ filtered + rejected): part of it was lost or counted twice between reading and "
        "writing (a runner dropping or repeating bundles?), so no manifest was written. Rerun "
        "the same command; if this recurs, the runner loses or duplicates work.")


def unwritten_documents(summary: Summary, *, inputs: list) -> list[tuple[str, str, int, int]]:
    """(path, what, passed on, reached the parts) for every input file whose documents did not
    all reach its part files exactly once, in input order. ``what`` is ``documents``: those
    Parse passed on to be written (``ReadStats.documents``) against those in the epoch-0 parts
    (every written document once, mixture or not); or ``copies``: those the epoch-0 parts'
    chunks call for (their repeats) against those in all the parts."""
    passed = {stats.file_index: stats.documents for stats in summary.files}
    wrong = []
    for file in inputs:
        parts = summary.parts.get(file.index, FileParts())
        if passed.get(file.index, 0) != parts.documents:
            wrong.append((file.path, "documents", passed.get(file.index, 0), parts.documents))
        elif parts.expected_copies != parts.copies:
            wrong.append((file.path, "copies", parts.expected_copies, parts.copies))
    return wrong


def check_documents_accounted(summary: Summary, *, inputs: list,
                              formats: tuple[str, ...]) -> None:
    """Raise DocumentsUnaccounted, naming the first file and both counts, unless every document
    Parse passed on reached the part files once per copy, and the shards hold every record of
    the parts (called before anything is committed, after ``check_lines_accounted``)."""
    rerun = ("so no manifest was written. Rerun the same command; if this recurs, the runner "
             "loses or duplicates work.")
    wrong = unwritten_documents(summary, inputs=inputs)
    if wrong:
        path, what, passed, reached = wrong[0]
        others = f" (and {len(wrong) - 1} other file(s))" if len(wrong) > 1 else ""
        told = (f"Parse passed on {passed:,} documents to write" if what == "documents" else
                f"its chunks' repeats (the mixture) call for {passed:,} copies of its documents")
        raise DocumentsUnaccounted(
            f"input {path}{others}: {told}, but {reached:,} reached the part files: a chunk "
            "was lost or written twice between parsing and writing its part (a runner dropping "
            f"or repeating bundles?), {rerun}")
    parted, sharded = summary.pack.records, sum(s.records for s in summary.shards)
    if parted != sharded:
        raise DocumentsUnaccounted(
            f"the part files hold {parted:,} records, but the {len(summary.shards)} shards "
            f"reported {sharded:,}: a shard was lost or reported twice between its plan and the "
            f"manifest, {rerun}")
    problem = files_problem(summary.format_files, formats=formats,
                            copies=sum(p.copies for p in summary.parts.values()))
    if problem:
        raise DocumentsUnaccounted(f"{problem}, {rerun}")


def encoder_record(summary: Summary) -> dict:
    """The manifest's ``encoder``: which backend encoded how many documents (and why ``auto``
    passed over a faster one), and what the exactness guard checked (``tokenizer.guard``)."""
    entries = sorted(summary.encoder, key=lambda e: (e.backend, e.version, e.reason))
    return {
        "backends": [{"name": e.backend, "version": e.version, "reason": e.reason,
                      "documents": e.documents} for e in entries],
        **{field: sum(getattr(e, field) for e in entries) for field in EncodeStats.COUNTS[1:]},
    }


def _totals(shards: list, *, pack, all_subsets) -> dict:
    """The manifest's ``totals``: the shards' sums, packing's drops and the documents'."""
    return {
        "shards": len(shards),
        "bytes": sum(s.bytes for s in shards),
        "records": sum(s.records for s in shards),
        "tokens": sum(s.tokens for s in shards),
        "padding_tokens": sum(s.padding_tokens for s in shards),
        "partial_records": pack.partial_records,
        "dropped_records": pack.dropped_records,
        "dropped_tokens": pack.dropped_tokens,
        "documents": all_subsets.documents,
        "text_bytes": all_subsets.bytes,
        "lossy_documents": all_subsets.lossy_documents,
    }


def build_manifest(summary: Summary, *, config: PipelineConfig, spec: DatasetSpec,
                   tokenizer: dict, inputs: list, created: str | None = None,
                   run_id: str = "", quality=None, resumed: dict | None = None) -> dict:
    """``quality``: the run's ``pipeline.quality.prepare.QualityRun`` (None: no data-quality
    option); its sections come from ``pipeline.dataset.quality_sections``. ``resumed``: the
    launcher's part of ``resume`` (``prepass_reused``, ``tokenizer_reused``; None: no
    ``resume``), to which the chunks reused and in all are added."""
    shards = sorted(summary.shards, key=lambda s: s.path)
    all_subsets = summed(summary.subsets.values())
    read = {stats.file_index: stats for stats in summary.files}
    return {
        "format": manifest_schema.FORMAT,
        "version": manifest_schema.VERSION,
        "split": config.split,
        "created": created or datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "run_id": run_id,  # the run that claimed and committed it (pipeline.launch.claim)
        **spec.manifest_fields(chunk_bytes=config.read.chunk_bytes),
        "tokenizer": tokenizer,
        "encoder": encoder_record(summary),
        "shards": [s.to_json() for s in shards],
        "totals": _totals(shards, pack=summary.pack, all_subsets=all_subsets),
        "subsets": {name: stats.to_json() for name, stats in sorted(summary.subsets.items())},
        "histograms": {
            "document_bytes": histogram.to_json(all_subsets.bytes_histogram),
            "document_tokens": histogram.to_json(all_subsets.tokens_histogram),
        },
        # Documents written per input file: they come first in the shards, in input order.
        "inputs": [
            {"path": f.path, "bytes": f.bytes,
             "format": read[f.index].format if f.index in read else "",
             "documents": read[f.index].documents if f.index in read else 0}
            for f in inputs
        ],
        "accounting": accounting(summary),
        "dead_letters": [d.to_json() for d in sorted(summary.dead_letters, key=lambda d: d.path)],
        **({"resume": {"parts_reused": summary.resume.reused,
                       "parts_total": summary.resume.reused + summary.resume.computed,
                       **resumed}} if resumed is not None else {}),
        **quality_sections(quality, files=summary.files, before=summary.before,
                           after=summary.subsets, hash_files=summary.doc_hashes),
        **filter_section(config.read, files=summary.files, subsets=summary.subsets,
                         record_files=summary.filter_records),
        "formats": list(config.formats),
        **format_sections(summary.format_files, formats=config.formats, shards=shards,
                          vocab_size=spec.vocab_size),
        "config": config.to_json(),
        "software": software_versions(),
    }


class _CommitManifestFn(beam.DoFn):
    def __init__(self, *, config, spec, tokenizer, inputs, run_id="", quality=None,
                 resumed=None):
        self._run_id = run_id
        self._resumed = resumed
        self._quality = quality
        self._config = config
        self._spec = spec
        self._tokenizer = tokenizer
        self._inputs = inputs

    def process(self, summary: Summary):
        check_lines_accounted(summary, inputs=self._inputs)
        check_documents_accounted(summary, inputs=self._inputs, formats=self._config.formats)
        doc = build_manifest(summary, config=self._config, spec=self._spec,
                             tokenizer=self._tokenizer, inputs=self._inputs,
                             run_id=self._run_id, quality=self._quality,
                             resumed=self._resumed)
        counts = doc["accounting"]
        bad = sum(counts["rejected"].values())
        if counts["read"] and bad / counts["read"] > self._config.read.max_bad_fraction:
            raise TooManyBadRecords(
                f"{bad} of {counts['read']} records were rejected "
                f"({bad / counts['read']:.2%} > --max_bad_fraction="
                f"{self._config.read.max_bad_fraction}); by reason: {counts['rejected']}. "
                f"See the dead letters under {self._config.output}/dead_letters; no manifest was "
                "written. Fix the input or raise --max_bad_fraction."
            )
        self._check_claim()  # before removing scratch a newer run may be writing
        # The parts are in the shards now; remove them (and the quality pre-pass's decision
        # files) before the manifest marks completion.
        for scratch in (PARTS_DIR, QUALITY_DIR):
            fs, parts = storage.filesystem(storage.join(self._config.output, scratch))
            if fs.exists(parts):
                fs.rm(parts, recursive=True)
        self._check_claim()
        yield manifest_schema.write(doc, directory=self._config.output)

    def _check_claim(self) -> None:
        # A job left running by an interrupted launcher, whose --output a newer run has taken
        # over, must not commit over it (ClaimLost). No run id: not a claimed run (tests).
        if self._run_id:
            check_held(self._config.output, run_id=self._run_id)


class CommitManifest(beam.PTransform):
    """Flattened statistics -> the path of the written manifest (one element)."""

    def __init__(self, *, config: PipelineConfig, spec: DatasetSpec, tokenizer: dict,
                 inputs: list, run_id: str = "", quality=None, resumed: dict | None = None):
        super().__init__()
        self._fn = _CommitManifestFn(config=config, spec=spec, tokenizer=tokenizer,
                                     inputs=inputs, run_id=run_id, quality=quality,
                                     resumed=resumed)

    def expand(self, stats):
        return (
            stats
            | "Summarize" >> beam.CombineGlobally(_SummaryFn())
            | "WriteManifest" >> beam.ParDo(self._fn)
        )
