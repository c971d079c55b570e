"""The start of an input file, read as the pipeline reads it, and what it says about the file.

``sample_file`` reads documents from the start of a file with the pipeline's own decoder and
parser (``pipeline.read.decode``, ``pipeline.read.parse``) until ``SAMPLE_TEXT_BYTES`` of text,
counting the compressed bytes the decoder consumed, so ``text_per_input_byte`` extrapolates to
the whole file. Each sampled document is kept as a ``SampledDoc``: its chunk (cut as
``pipeline.read.stage`` cuts them), line, subset, size, tokens and the hash exact dedup uses
(``pipeline.quality.doc_hash``), so that a file read to its end is counted exactly, data-quality
options included; with ``SampleChecks`` also its MinHash signature (``--dedup=near``) and what
the evaluation n-grams found in it (``--decontaminate``). The CPU seconds of reading, hashing,
tokenizing and those checks are measured on the way (the pre-pass's cost). For ``--dry_run``
(``pipeline.launch.dry_run``).
"""

from __future__ import annotations

import dataclasses
import io
import time

from common import storage
from pipeline.config import ReadConfig
from pipeline.quality import doc_hash, minhash, ngrams
from pipeline.read import decode, parse
from pipeline.read.inputs import InputFile

SAMPLE_TEXT_BYTES = 1 << 20  # text read from the start of each sampled file
MAX_SAMPLED_FILES = 16  # evenly spaced over the inputs; the others are taken to be alike
# Without a tokenizer model: a common figure for English web text with a 32k-50k BPE vocabulary;
# code, math and other languages take more tokens per byte.
ASSUMED_BYTES_PER_TOKEN = 4.0


@dataclasses.dataclass(frozen=True)
class SampleChecks:
    """The pre-pass's per-document work the sample repeats, where the run's options ask."""

    minhash: minhash.MinHashOptions | None = None  # --dedup=near
    eval_set: ngrams.EvalSet | None = None  # --decontaminate
    redact: bool = False  # --decontaminate_mode=redact


@dataclasses.dataclass(frozen=True)
class Contamination:
    """What the evaluation n-grams found in one sampled document (``ngrams.match``)."""

    sets: tuple[int, ...]  # the evaluation sets (indices) it holds n-grams of
    dropped: bool  # drop mode, or redacted to nothing
    spans: int = 0  # redact: the spans cut
    characters: int = 0  # redact: the characters cut


@dataclasses.dataclass(frozen=True)
class SampledDoc:
    """One sampled document, with what the data-quality options decide by."""

    chunk: int  # index of its chunk in the file, as pipeline.read.stage cuts them
    line: int
    subset: str
    text_bytes: int
    tokens: float  # measured with the model, else assumed (ASSUMED_BYTES_PER_TOKEN)
    digest: bytes  # pipeline.quality.doc_hash.doc_hash of its text
    signature: bytes | None = None  # MinHash (SampleChecks.minhash; None: none, or no words)
    contamination: Contamination | None = None  # SampleChecks.eval_set found n-grams in it


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
    seconds: float = 0.0  # reading and parsing, wall (tokenizing and hashing not included)
    encode_seconds: float = 0.0  # wall
    hash_seconds: float = 0.0  # wall
    checks_seconds: float = 0.0  # wall, of the SampleChecks
    read_cpu: float = 0.0  # CPU seconds (every thread) of reading and parsing
    hash_cpu: float = 0.0  # of hashing the documents for dedup
    encode_cpu: float = 0.0  # of tokenizing them (with a model)
    minhash_cpu: float = 0.0  # of their MinHash signatures (--dedup=near)
    scan_cpu: float = 0.0  # of looking their n-grams up (--decontaminate)
    subsets: dict = dataclasses.field(default_factory=dict)  # subset -> [text bytes, tokens]
    docs: list = dataclasses.field(default_factory=list)  # SampledDoc, in line order

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
                text_bytes: int = SAMPLE_TEXT_BYTES,
                checks: SampleChecks | None = None) -> FileSample:
    """Read documents from the start of ``file`` until ``text_bytes`` of text (or its end);
    ``encoder``: a ``tokenizer.backends.EncoderBackend`` (None: tokens assumed); ``checks``:
    the data-quality work to repeat per document (None: exact dedup's hash only)."""
    sample = FileSample(file=file)
    started, started_cpu = time.perf_counter(), time.process_time()
    fs, stripped = storage.filesystem(file.path)
    pending, pending_bytes, chunk = [], 0, 0
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
                    _take_chunk(pending, chunk=chunk, encoder=encoder, sample=sample, checks=checks)
                    pending, pending_bytes, chunk = [], 0, chunk + 1
                if sample.text_bytes >= text_bytes:
                    break
            else:
                sample.complete = True
        except decode.StreamError:
            sample.complete = True  # the pipeline reads no further either (one dead letter)
        sample.consumed = buffered.tell()
    _take_chunk(pending, chunk=chunk, encoder=encoder, sample=sample, checks=checks)
    sample.seconds = (time.perf_counter() - started - sample.encode_seconds
                      - sample.hash_seconds - sample.checks_seconds)
    sample.read_cpu = (time.process_time() - started_cpu - sample.encode_cpu - sample.hash_cpu
                       - sample.minhash_cpu - sample.scan_cpu)
    return sample


def _produced(blocks, sample: FileSample):
    for block in blocks:
        sample.produced += len(block)
        yield block


def _take_chunk(documents: list, *, chunk: int, encoder, sample: FileSample,
                checks: SampleChecks | None) -> None:
    """Count one chunk's documents into ``sample``: tokens, hashes, checks (each timed)."""
    if not documents:
        return
    wall, cpu = time.perf_counter(), time.process_time()
    if encoder is not None:
        counts = [len(ids) for ids in encoder.encode_batch([d.text for d in documents])]
    else:
        counts = [d.text_bytes / ASSUMED_BYTES_PER_TOKEN for d in documents]
    encoded_wall, encoded_cpu = time.perf_counter(), time.process_time()
    digests = [doc_hash.doc_hash(d.text) for d in documents]
    sample.encode_seconds += encoded_wall - wall
    sample.encode_cpu += encoded_cpu - cpu
    sample.hash_seconds += time.perf_counter() - encoded_wall
    sample.hash_cpu += time.process_time() - encoded_cpu
    signatures, found = _checked(documents, checks=checks or SampleChecks(), sample=sample)
    for doc, count, digest, signature, match in zip(documents, counts, digests, signatures,
                                                     found):
        entry = sample.subsets.setdefault(doc.subset, [0, 0])
        entry[0] += doc.text_bytes
        entry[1] += count
        sample.tokens += count
        sample.docs.append(SampledDoc(chunk=chunk, line=doc.line, subset=doc.subset,
                                      text_bytes=doc.text_bytes, tokens=count, digest=digest,
                                      signature=signature, contamination=match))


def _checked(documents: list, *, checks: SampleChecks, sample: FileSample):
    """Each document's signature and Contamination (or None), as the pre-pass finds them."""
    wall, cpu = time.perf_counter(), time.process_time()
    signatures = ([minhash.signature(d.text, options=checks.minhash) for d in documents]
                  if checks.minhash else [None] * len(documents))
    signed_cpu = time.process_time()
    found = [None] * len(documents)
    if checks.eval_set is not None:
        cache: dict = {}
        for i, doc in enumerate(documents):
            match = ngrams.match(doc.text, checks.eval_set, redact=checks.redact, cache=cache)
            if match is not None:
                found[i] = Contamination(
                    sets=tuple(index for index, _ in match.sets),
                    dropped=not checks.redact or not match.text.strip(),
                    spans=0 if match.spans is None else len(match.spans),
                    characters=match.removed_chars)
    sample.minhash_cpu += signed_cpu - cpu
    sample.scan_cpu += time.process_time() - signed_cpu
    sample.checks_seconds += time.perf_counter() - wall
    return signatures, found


def sampled_indices(count: int, *, most: int = MAX_SAMPLED_FILES) -> list[int]:
    """``most`` file indices evenly spaced over ``count`` files (all of them if fewer).

    >>> sampled_indices(30, most=4)
    [0, 10, 19, 29]
    """
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / (most - 1)) for i in range(most)})
