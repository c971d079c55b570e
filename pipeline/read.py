"""Stage 1, Read: input files -> chunks of documents, dead letters, per-file accounting.

``read_file`` is a pure generator (no Beam) that streams one file; ``ReadDocuments`` is the
composite PTransform. A chunk holds whole documents, about ``chunk_bytes`` of text: it is the
unit tokenized and packed together (and, on distributed runners, spread over workers).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Iterator

import apache_beam as beam

from common import storage
from common.errors import DataError
from pipeline import decode, parse
from pipeline.config import ReadConfig
from pipeline.inputs import InputFile, check_unchanged

DEAD_LETTERS = "dead_letters"
READ_STATS = "read_stats"


class BadInputError(DataError):
    """Raised with --on_bad_record=fail; the message names file, line and the fix."""


@dataclasses.dataclass(frozen=True)
class Chunk:
    file_index: int
    chunk_index: int
    documents: tuple[parse.Document, ...]
    # Copies of each document to write (pipeline.mixture); () = one each, no mixture.
    repeats: tuple[int, ...] = ()
    # Compressed bytes of the input file read when the chunk was closed (progress and ETA).
    input_offset: int = 0


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    file: str
    file_index: int
    line: int | None
    offset: int | None  # byte offset in the decompressed stream (compressed for stream errors)
    reason: str
    detail: str
    excerpt: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ReadStats:
    """Per-file accounting: read = written + filtered + rejected (written is counted later)."""

    file_index: int
    path: str
    format: str = ""
    lines: int = 0
    documents: int = 0  # documents passed on to tokenization
    filtered: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    rejected: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # (reason, subset) -> documents, for the reasons of pipeline.selection (manifest: quality)
    filtered_by_subset: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)


def read_file(file: InputFile, *, config: ReadConfig) -> Iterator[Chunk | DeadLetter | ReadStats]:
    """Stream one file; yield Chunks and DeadLetters in file order, then its ReadStats."""
    stats = ReadStats(file_index=file.index, path=file.path)
    pending: list[parse.Document] = []
    pending_bytes = 0
    chunk_index = 0

    def dead(line, offset, reason, detail, data=b""):
        stats.rejected[reason] += 1
        return DeadLetter(file.path, file.index, line, offset, reason, detail, parse.excerpt(data))

    fs, stripped = storage.filesystem(file.path)
    last_line = 0
    try:
        check_unchanged(file, fs, stripped, when="after the run listed it")
        with fs.open(stripped, "rb") as raw:
            stats.format, blocks = decode.open_blocks(
                raw, path=file.path, max_window_bytes=config.max_window_bytes
            )
            for line in decode.iter_lines(blocks, max_line_bytes=config.max_line_bytes):
                last_line = line.number
                stats.lines += 1
                if line.data is None:
                    yield dead(line.number, line.offset, "line_too_long",
                               f"{line.length} bytes > --max_line_bytes={config.max_line_bytes}")
                    continue
                result = parse.parse_line(line.data, line=line.number)
                if isinstance(result, parse.Rejected):
                    yield dead(line.number, line.offset, result.reason, result.detail, line.data)
                elif isinstance(result, parse.Filtered):
                    stats.filtered[result.reason] += 1
                elif not config.selects(result.subset):
                    stats.filtered["subset_excluded"] += 1
                else:
                    stats.documents += 1
                    pending.append(result)
                    pending_bytes += result.text_bytes
                    if pending_bytes >= config.chunk_bytes:
                        yield Chunk(file.index, chunk_index, tuple(pending),
                                    input_offset=_position(raw))
                        chunk_index, pending, pending_bytes = chunk_index + 1, [], 0
    except decode.StreamError as err:
        # The part of a line cut by the damage is counted once, as this dead letter.
        yield dead(last_line + 1, err.offset, err.reason, err.detail)
    except OSError as err:
        yield dead(None, None, "unreadable_file", f"{type(err).__name__}: {err}")
    check_unchanged(file, fs, stripped, when="while the run read it")
    if pending:
        yield Chunk(file.index, chunk_index, tuple(pending), input_offset=file.bytes)
    yield stats


def _position(raw) -> int:
    try:
        return raw.tell()
    except (OSError, ValueError):  # a stream that cannot tell: progress only, not correctness
        return 0


def iter_documents(file: InputFile, *, config: ReadConfig) -> Iterator[parse.Document]:
    """Only the documents of ``read_file``, in file order (dead letters and stats dropped)."""
    for item in read_file(file, config=config):
        if isinstance(item, Chunk):
            yield from item.documents


class _ReadFileFn(beam.DoFn):
    def __init__(self, config: ReadConfig, selection=None):
        self._config = config
        self._selection = selection  # pipeline.selection.Selection: drops and copies

    def process(self, file: InputFile):
        items = read_file(file, config=self._config)
        if self._selection is not None:
            items = self._selection.apply(file, items)
        for item in items:
            if isinstance(item, Chunk):
                beam.metrics.Metrics.counter("read", "chunks").inc()
                lengths = beam.metrics.Metrics.distribution("read", "document_bytes")
                for document in item.documents:
                    lengths.update(document.text_bytes)
                yield item
            elif isinstance(item, DeadLetter):
                beam.metrics.Metrics.counter("read", f"rejected_{item.reason}").inc()
                if self._config.on_bad_record == "fail":
                    raise BadInputError(
                        f"bad record in {item.file} line {item.line} "
                        f"(byte {item.offset}): {item.reason}: {item.detail}. Fix or remove "
                        "the file, or rerun with --on_bad_record=skip to write it to the dead "
                        "letters and continue."
                    )
                yield beam.pvalue.TaggedOutput(DEAD_LETTERS, item)
            else:
                yield beam.pvalue.TaggedOutput(READ_STATS, item)


class ReadDocuments(beam.PTransform):
    """PCollection[InputFile] -> {main: Chunk, dead_letters: DeadLetter, read_stats: ReadStats}.

    ``selection`` (``pipeline.selection.Selection``): the quality pre-pass's drops and the
    mixture's repeat counts, applied as each file is read."""

    def __init__(self, *, config: ReadConfig, selection=None):
        super().__init__()
        self._config = config
        self._selection = selection

    def expand(self, files):
        fn = _ReadFileFn(self._config, self._selection)
        return files | "ReadFile" >> beam.ParDo(fn).with_outputs(
            DEAD_LETTERS, READ_STATS, main="chunks"
        )
