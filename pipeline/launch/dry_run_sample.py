"""The start of an input file, read as the pipeline reads it, and what it says about the file.

``sample_file`` reads documents from the start of a file with the pipeline's own decoder and
parser (``pipeline.read.decode``, ``pipeline.read.parse``) until ``SAMPLE_TEXT_BYTES`` of text, counting
the compressed bytes the decoder consumed, so ``text_per_input_byte`` extrapolates to the whole
file; a file read to its end is counted exactly, its chunks rebuilt as ``pipeline.read.stage`` cuts
them. For ``--dry_run`` (``pipeline.launch.dry_run``).
"""

from __future__ import annotations

import dataclasses
import io
import time

from common import storage
from pipeline.config import ReadConfig
from pipeline.read import decode, parse
from pipeline.read.inputs import InputFile

SAMPLE_TEXT_BYTES = 1 << 20  # text read from the start of each sampled file
MAX_SAMPLED_FILES = 16  # evenly spaced over the inputs; the others are taken to be alike
# Without a tokenizer model: a common figure for English web text with a 32k-50k BPE vocabulary;
# code, math and other languages take more tokens per byte.
ASSUMED_BYTES_PER_TOKEN = 4.0


@dataclasses.dataclass
class FileSample:
    """What the start of one input file says about all of it."""

    file: InputFile
    text_bytes: int = 0
    documents: int = 0
    tokens: int = 0  # of the sampled documents (0 without a tokenizer model)
    consumed: int = 0  # compressed bytes read by the decoder
    produced: int = 0  # decompressed bytes those gave
    line_bytes: int = 0  # decompressed bytes of the lines parsed
    complete: bool = False  # read to its end: the figures are the file's own
    seconds: float = 0.0  # reading and parsing (tokenizing not included)
    encode_seconds: float = 0.0
    subsets: dict = dataclasses.field(default_factory=dict)  # subset -> [text bytes, tokens]
    chunk_labels: list = dataclasses.field(default_factory=list)  # per chunk, when complete

    @property
    def text_per_input_byte(self) -> float:
        if self.complete or not self.consumed or not self.line_bytes:
            return self.text_bytes / max(1, self.file.bytes)
        return (self.text_bytes / self.line_bytes) * (self.produced / self.consumed)


class _Counted(io.RawIOBase):
    """A raw stream that counts the bytes read through it (``tell`` = bytes read)."""

    def __init__(self, raw):
        self._raw, self.bytes = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        buffer[:len(data)] = data
        self.bytes += len(data)
        return len(data)

    def tell(self) -> int:
        return self.bytes


def sample_file(file: InputFile, *, config: ReadConfig, encoder=None,
                text_bytes: int = SAMPLE_TEXT_BYTES) -> FileSample:
    """Read documents from the start of ``file`` until ``text_bytes`` of text (or its end)."""
    sample = FileSample(file=file)
    started = time.perf_counter()
    fs, stripped = storage.filesystem(file.path)
    pending, pending_bytes, chunk_labels = [], 0, []

    def take_chunk():
        chunk_labels.append(sum(_count_tokens(pending, encoder, sample)) + len(pending))
        pending.clear()

    with fs.open(stripped, "rb") as raw:
        counted = _Counted(raw)
        buffered = io.BufferedReader(counted, 64 << 10)
        try:
            _, blocks = decode.open_blocks(buffered, path=file.path,
                                           max_window_bytes=config.max_window_bytes)
            for line in decode.iter_lines(_produced(blocks, sample),
                                          max_line_bytes=config.max_line_bytes):
                sample.line_bytes = line.offset + line.length + 1
                if line.data is None:
                    continue
                result = parse.parse_line(line.data, line=line.number)
                pending_bytes += len(line.data) + 1
                if isinstance(result, parse.Document) and config.selects(result.subset):
                    sample.documents += 1
                    sample.text_bytes += result.text_bytes
                    pending.append(result)
                if pending_bytes >= config.chunk_bytes:  # as pipeline.read.stage cuts chunks
                    if pending:
                        take_chunk()
                    pending_bytes = 0
                if sample.text_bytes >= text_bytes:
                    break
            else:
                sample.complete = True
        except decode.StreamError:
            sample.complete = True  # the pipeline reads no further either (one dead letter)
        sample.consumed = buffered.tell()
    if pending:
        take_chunk()
    if sample.complete:
        sample.chunk_labels = chunk_labels
    sample.seconds = time.perf_counter() - started - sample.encode_seconds
    return sample


def _produced(blocks, sample: FileSample):
    for block in blocks:
        sample.produced += len(block)
        yield block


def _count_tokens(documents, encoder, sample: FileSample):
    """Token counts of ``documents`` (estimated without an encoder); per-subset totals kept."""
    if encoder is not None:
        started = time.perf_counter()
        counts = [len(ids) for ids in encoder.encode_batch([d.text for d in documents])]
        sample.encode_seconds += time.perf_counter() - started
    else:
        counts = [d.text_bytes / ASSUMED_BYTES_PER_TOKEN for d in documents]
    for doc, count in zip(documents, counts):
        entry = sample.subsets.setdefault(doc.subset, [0, 0])
        entry[0] += doc.text_bytes
        entry[1] += count
        sample.tokens += count
    return counts


def sampled_indices(count: int, *, most: int = MAX_SAMPLED_FILES) -> list[int]:
    """``most`` file indices evenly spaced over ``count`` files (all of them if fewer).

    >>> sampled_indices(30, most=4)
    [0, 10, 19, 29]
    """
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / (most - 1)) for i in range(most)})
