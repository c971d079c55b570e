"""Stage 1, Read: input files -> chunks of documents, dead letters, per-file accounting.

Two pure steps (no Beam): ``read_lines`` streams one file into RawChunks of about
``chunk_bytes`` of whole lines (the serial part: decompressing and splitting), and
``parse_chunk`` turns one RawChunk into a Chunk of documents (parsing, validating, selecting
subsets), which any worker can do. ``read_file`` chains them for one file; ``ReadDocuments``
is the composite PTransform, with the fan-out between the two. A chunk is the unit tokenized
and packed together.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import itertools
from typing import Iterator

import apache_beam as beam
import zstandard

from common import storage
from common.errors import DataError
from pipeline.config import ReadConfig
from pipeline.read import decode, parse
from pipeline.read.accounting import DeadLetter, ReadStats
from pipeline.read.chunk_coder import register
from pipeline.read.filter_records import FILTERED, FilterRecord, failure_of
from pipeline.read.inputs import InputFile, check_unchanged
from pipeline.read.replay import REUSED, committed_parse, replayed

DEAD_LETTERS = "dead_letters"
READ_STATS = "read_stats"


class BadInputError(DataError):
    """Raised with --on_bad_record=fail; the message names file, line and the fix."""


@register
@dataclasses.dataclass(frozen=True)
class Chunk:
    file_index: int
    chunk_index: int
    documents: tuple[parse.Document, ...]
    # Copies of each document to write (pipeline.quality.mixture); () = one each, no mixture.
    repeats: tuple[int, ...] = ()
    # The compressed bytes of the input file this chunk consumed: [input_start, input_offset),
    # the previous chunk's end to the position when it was closed (progress and ETA only).
    input_offset: int = 0
    input_start: int = 0

    def approx_bytes(self) -> int:
        return sum(document.text_bytes for document in self.documents)


@register
@dataclasses.dataclass(frozen=True)
class RawChunk:
    """Consecutive lines of one file, not yet parsed: what Read hands to any worker.

    Bytes, so that moving it between workers (the fan-out) costs a copy, not a parse; and,
    when it is to move (``compressed``), zstd-compressed at level 1: about 2.7x fewer bytes
    through the runner's shuffle for ~4 ms a MB of work on the reading worker."""

    file_index: int
    chunk_index: int
    numbers: tuple[int, ...]  # 1-based line numbers
    offsets: tuple[int, ...]  # byte offsets in the decompressed stream
    lengths: tuple[int, ...]  # of each line's content (without its line ending)
    data: bytes  # the contents, concatenated (zstd-compressed if ``compressed``)
    input_offset: int = 0  # see Chunk
    compressed: bool = False
    input_start: int = 0  # see Chunk

    def approx_bytes(self) -> int:
        return len(self.data) + 24 * len(self.numbers)

    @classmethod
    def of_lines(cls, file_index: int, chunk_index: int, lines: list, *,
                 input_start: int, input_offset: int) -> "RawChunk":
        """``lines``: ``pipeline.read.decode.Line``s with their contents."""
        return cls(file_index, chunk_index, tuple(line.number for line in lines),
                   tuple(line.offset for line in lines), tuple(len(line.data) for line in lines),
                   b"".join(line.data for line in lines), input_offset,
                   input_start=input_start)

    def compressed_copy(self) -> "RawChunk":
        if self.compressed:
            return self
        data = zstandard.ZstdCompressor(level=1).compress(self.data)  # releases the GIL
        return dataclasses.replace(self, data=data, compressed=True)

    def lines(self) -> list[bytes]:
        data = zstandard.ZstdDecompressor().decompress(self.data) if self.compressed else self.data
        ends = itertools.accumulate(self.lengths)
        return [data[end - length:end] for end, length in zip(ends, self.lengths)]


def read_lines(file: InputFile, *, config: ReadConfig) -> Iterator[RawChunk | DeadLetter |
                                                                   ReadStats]:
    """Stream one file: RawChunks of about ``chunk_bytes`` of lines and the DeadLetters of the
    stream itself (lines too long, damage), in file order, then the file's ReadStats (its
    format and lines; documents, filtered and rejected are counted by ``parse_chunk``)."""
    stats = ReadStats(file_index=file.index, path=file.path)
    pending: list[decode.Line] = []
    pending_bytes = 0
    chunk_index = 0
    start = 0  # compressed offset where the next chunk's input begins

    def dead(line, offset, reason, detail):
        stats.rejected[reason] += 1
        return DeadLetter(file.path, file.index, line, offset, reason, detail, "")

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
                pending.append(line)
                pending_bytes += len(line.data) + 1
                if pending_bytes >= config.chunk_bytes:
                    end = max(start, _position(raw))
                    yield RawChunk.of_lines(file.index, chunk_index, pending,
                                            input_start=start, input_offset=end)
                    chunk_index, pending, pending_bytes, start = chunk_index + 1, [], 0, end
    except decode.StreamError as err:
        # The part of a line cut by the damage is counted once, as this dead letter.
        stats.stream_errors += 1
        yield dead(last_line + 1, err.offset, err.reason, err.detail)
    except OSError as err:
        stats.stream_errors += 1
        yield dead(None, None, "unreadable_file", f"{type(err).__name__}: {err}")
    check_unchanged(file, fs, stripped, when="while the run read it")
    if pending:
        yield RawChunk.of_lines(file.index, chunk_index, pending, input_start=start,
                                input_offset=max(start, file.bytes))
    yield stats


def parse_chunk(raw: RawChunk, *, path: str, config: ReadConfig,
                stats: ReadStats) -> Iterator[Chunk | DeadLetter | FilterRecord]:
    """Parse a RawChunk's lines: its DeadLetters and FilterRecords (``--filters``) in line
    order, then its Chunk (if any document is kept). Documents, filtered and rejected lines are
    counted into ``stats``."""
    documents = []
    for number, offset, data in zip(raw.numbers, raw.offsets, raw.lines()):
        result = parse.parse_line(data, line=number)
        if isinstance(result, parse.Rejected):
            stats.rejected[result.reason] += 1
            yield DeadLetter(path, raw.file_index, number, offset, result.reason, result.detail,
                             parse.excerpt(data))
        elif isinstance(result, parse.Filtered):
            stats.filtered[result.reason] += 1
        elif not config.selects(result.subset):
            stats.filtered["subset_excluded"] += 1
        elif config.filters and (failure := failure_of(result, config)) is not None:
            stats.filtered[failure.rule] += 1
            stats.filtered_by_subset[(failure.rule, result.subset)] += 1
            yield FilterRecord(path, raw.file_index, raw.chunk_index, number, offset,
                               result.subset, failure.rule, failure.detail(),
                               parse.excerpt(data))
        else:
            stats.documents += 1
            documents.append(result)
    if documents:
        yield Chunk(raw.file_index, raw.chunk_index, tuple(documents),
                    input_offset=raw.input_offset, input_start=raw.input_start)


def read_file(file: InputFile, *, config: ReadConfig) -> Iterator[Chunk | DeadLetter | ReadStats]:
    """Stream one file; yield Chunks and DeadLetters in file order, then its ReadStats."""
    parsed = ReadStats(file_index=file.index, path=file.path)  # every chunk's counts
    for item in read_lines(file, config=config):
        if isinstance(item, RawChunk):
            yield from parse_chunk(item, path=file.path, config=config, stats=parsed)
        elif isinstance(item, ReadStats):  # the last item: the file's lines and format
            item.merge(parsed)
            yield item
        else:
            yield item


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


def _dead_letter_or_fail(item: DeadLetter, config: ReadConfig):
    beam.metrics.Metrics.counter("read", f"rejected_{item.reason}").inc()
    if config.on_bad_record == "fail":
        raise BadInputError(
            f"bad record in {item.file} line {item.line} "
            f"(byte {item.offset}): {item.reason}: {item.detail}. Fix or remove "
            "the file, or rerun with --on_bad_record=skip to write it to the dead "
            "letters and continue."
        )
    return beam.pvalue.TaggedOutput(DEAD_LETTERS, item)


class _ReadLinesFn(beam.DoFn):
    """InputFile -> RawChunks (compressed in threads with ``compress``), its DeadLetters and
    its ReadStats."""

    def __init__(self, config: ReadConfig, compress: bool = False, committed=None):
        self._config = config
        self._compress = compress
        self._committed = committed  # pipeline.write.committed_parts.CommittedParts, or None
        self._pool = None

    def setup(self):
        if self._compress:
            from tokenizer.encoder import usable_cores

            # Reading is serial; compressing in threads (without the GIL) uses this
            # worker's other cores meanwhile.
            self._threads = usable_cores()
            self._pool = concurrent.futures.ThreadPoolExecutor(self._threads)

    def process(self, file: InputFile):
        committed = self._committed
        whole = committed.reused_file(file.index) if committed is not None else None
        if whole is not None:  # a dead run committed all of it: nothing to read
            outputs, units = whole
            yield from replayed(outputs, units)
            return
        pending = collections.deque()
        stream, chunks = [], 0  # the file's own outputs (not its chunks'), and its chunks
        for item in read_lines(file, config=self._config):
            if isinstance(item, RawChunk):
                chunks += 1
                unit = committed.reused_chunk(file.index, item.chunk_index) if committed else None
                if unit is not None:
                    yield from replayed((), [unit])
                    continue
                if committed is not None:
                    yield beam.pvalue.TaggedOutput(READ_STATS, committed.computed())
                if self._pool is None:
                    yield item
                    continue
                pending.append(self._pool.submit(item.compressed_copy))
                while len(pending) > self._threads + 1:  # bounded memory
                    yield pending.popleft().result()
            else:
                output = (_dead_letter_or_fail(item, self._config)
                          if isinstance(item, DeadLetter)
                          else beam.pvalue.TaggedOutput(READ_STATS, item))
                stream.append((output.tag, output.value))
                yield output
        while pending:
            yield pending.popleft().result()
        if committed is not None:
            committed.commit_file(file.index, outputs={"outputs": stream, "chunks": chunks})

    def teardown(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


class _ParseChunkFn(beam.DoFn):
    """RawChunk -> Chunk, DeadLetters and the chunk's ReadStats, on whichever worker has it."""

    def __init__(self, config: ReadConfig, paths: tuple[str, ...], selection=None,
                 committed=None):
        self._config = config
        self._paths = paths
        self._selection = selection  # pipeline.quality.selection.Selection: drops and copies
        self._committed = committed  # pipeline.write.committed_parts.CommittedParts, or None

    def setup(self):
        self._decisions = {}  # file index -> its pre-pass decisions, loaded once per worker

    def process(self, raw: RawChunk):
        if self._committed is None:
            yield from self._parse(raw)
            return
        yield from committed_parse(self._committed, raw, list(self._parse(raw)))

    def _parse(self, raw: RawChunk):
        path = self._paths[raw.file_index]
        stats = ReadStats(file_index=raw.file_index, path=path)
        for item in parse_chunk(raw, path=path, config=self._config, stats=stats):
            if isinstance(item, DeadLetter):
                yield _dead_letter_or_fail(item, self._config)
                continue
            if isinstance(item, FilterRecord):
                beam.metrics.Metrics.counter("filters", item.rule).inc()
                beam.metrics.Metrics.counter("filters", f"{item.rule}/{item.subset}").inc()
                yield beam.pvalue.TaggedOutput(FILTERED, item)
                continue
            if self._selection is not None:
                item = self._selection.apply_chunk(item, stats, decisions=self._decisions)
            if item is not None:
                beam.metrics.Metrics.counter("read", "chunks").inc()
                lengths = beam.metrics.Metrics.distribution("read", "document_bytes")
                for document in item.documents:
                    lengths.update(document.text_bytes)
                yield item
        yield beam.pvalue.TaggedOutput(READ_STATS, stats)


class ReadDocuments(beam.PTransform):
    """PCollection[InputFile] -> {"chunks": Chunk, "dead_letters": DeadLetter,
    "read_stats": ReadStats, "reused": ReusedChunk, "filtered": FilterRecord} (a file's
    ReadStats may come in several parts: merge them by ``file_index``).

    Reading a file is serial (one compressed stream); only splitting it into lines happens
    there. With ``fanout`` the RawChunks are redistributed (a Reshuffle) before the costly
    part -- parsing, selecting, then tokenizing downstream -- so any worker may take any
    chunk, in any order and bundle. ``selection`` (``pipeline.quality.selection.Selection``): the
    quality pre-pass's drops and the mixture's repeat counts, applied to each chunk.
    ``committed`` (``CommittedParts``): what a dead run committed is not read again
    (``pipeline.read.replay``)."""

    def __init__(self, *, config: ReadConfig, paths: tuple[str, ...], fanout: bool = False,
                 selection=None, committed=None):
        super().__init__()
        self._config = config
        self._paths = tuple(paths)
        self._fanout = fanout
        self._selection = selection
        self._committed = committed

    def expand(self, files):
        # Compressed only when chunks move between workers: fused, it would be wasted work.
        fn = _ReadLinesFn(self._config, compress=self._fanout, committed=self._committed)
        read = files | "ReadLines" >> beam.ParDo(fn).with_output_types(RawChunk).with_outputs(
            DEAD_LETTERS, READ_STATS, REUSED, main="raw")
        raw = read.raw
        if self._fanout:  # any worker may take any chunk, in any order and bundle
            raw = raw | "FanOut" >> beam.Reshuffle()
        parsed = raw | "Parse" >> beam.ParDo(
            _ParseChunkFn(self._config, self._paths, self._selection,
                          self._committed)).with_output_types(
            Chunk).with_outputs(
            DEAD_LETTERS, READ_STATS, FILTERED, main="chunks")
        return {
            "chunks": parsed.chunks,
            REUSED: read[REUSED],
            FILTERED: parsed[FILTERED],
            "dead_letters": ((read[DEAD_LETTERS], parsed[DEAD_LETTERS])
                             | "AllDeadLetters" >> beam.Flatten()),
            "read_stats": (read[READ_STATS], parsed[READ_STATS]) | "AllStats" >> beam.Flatten(),
        }
