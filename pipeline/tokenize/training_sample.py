"""Draw the tokenizer's training sample from the input, stratified by ``pile_set_name``.

Two streaming passes over the input (reading is cheap next to tokenizing; holding the input
is not an option):

1. ``SubsetTotals``: text bytes per subset.
2. ``DrawSample``: every document is cut into pieces of at most ``max_piece_bytes`` at line
   boundaries; a piece is kept when its priority ``u = hash(seed, file, line, piece)`` in
   [0, 1) is below its subset's inclusion rate ``quota / total``.

Quotas give each subset an equal share of ``sample_bytes`` ("water filling": a subset smaller
than its share contributes all of its text and the rest is shared among the larger ones), so
small subsets such as code or math are not drowned by web text. The sample is reproducible
from the seed, and its memory is the sample itself (kept pieces), not the input.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import struct

import apache_beam as beam

from common import storage
from pipeline.config import ReadConfig
from pipeline.read.stage import iter_documents
from schemas.claim import NO_FENCE, Fence


def allocate_quotas(totals: dict[str, int], *, sample_bytes: int) -> dict[str, int]:
    """Equal shares of ``sample_bytes`` per subset, capped by each subset's size.

    >>> allocate_quotas({"a": 10, "b": 100, "c": 100}, sample_bytes=100)
    {'a': 10, 'b': 45, 'c': 45}
    """
    quotas = {}
    remaining = dict(totals)
    budget = sample_bytes
    while remaining:
        share = budget // len(remaining)
        small = {name: size for name, size in remaining.items() if size <= share}
        if not small:
            quotas.update({name: share for name in remaining})
            break
        for name, size in small.items():
            quotas[name] = size
            budget -= size
            del remaining[name]
    return dict(sorted(quotas.items()))


def priority(*, seed: int, file_index: int, line: int, piece: int) -> float:
    digest = hashlib.blake2b(f"{seed}:{file_index}:{line}:{piece}".encode(), digest_size=8)
    return struct.unpack("<Q", digest.digest())[0] / 2**64


def split_pieces(text: str, *, max_piece_bytes: int) -> list[str]:
    """Cut text into pieces of at most ``max_piece_bytes`` UTF-8 bytes, at line ends if possible.

    Lines keep their ``\\n`` so the tokenizer learns newlines and indentation.
    """
    pieces, current, size = [], [], 0
    for line in text.splitlines(keepends=True):
        line_size = len(line.encode("utf-8"))
        if line_size > max_piece_bytes:  # a very long line: hard cut by characters
            if current:
                pieces.append("".join(current))
                current, size = [], 0
            step = max(1, max_piece_bytes // 4)
            pieces.extend(line[i:i + step] for i in range(0, len(line), step))
            continue
        if size + line_size > max_piece_bytes and current:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += line_size
    if current:
        pieces.append("".join(current))
    return pieces


class _TotalsFn(beam.DoFn):
    def __init__(self, config: ReadConfig):
        self._config = config

    def process(self, file):
        for doc in iter_documents(file, config=self._config):
            yield doc.subset, doc.text_bytes


class _DrawFn(beam.DoFn):
    def __init__(self, *, config: ReadConfig, seed: int, max_piece_bytes: int):
        self._config = config
        self._seed = seed
        self._max_piece_bytes = max_piece_bytes

    def process(self, file, rates):
        for doc in iter_documents(file, config=self._config):
            rate = rates.get(doc.subset, 0.0)
            pieces = split_pieces(doc.text, max_piece_bytes=self._max_piece_bytes)
            for i, piece in enumerate(pieces):
                u = priority(seed=self._seed, file_index=file.index, line=doc.line, piece=i)
                if u < rate:
                    yield file.index, (u, doc.subset, piece)


# The names ``write_sample_file`` gives, and its temporary files': the only files in the sample
# directory that are pilepack's (a user's own files there are never read or removed).
SAMPLE_FILE = re.compile(r"sample-\d{5,}\.jsonl")
_SAMPLE_TMP = re.compile(rf"{re.escape(storage.TMP_MARKER)}[0-9a-f]+-{SAMPLE_FILE.pattern}")


def write_sample_file(pieces, *, directory: str, file_index: int,
                      fence: Fence = NO_FENCE) -> str:
    """One input file's kept pieces -> ``sample-{file:05d}.jsonl`` in priority order.

    Named by the input file, and written after grouping by it: a retried or re-bundled draw
    rewrites the same file with the same lines, so the sample (and the tokenizer trained on it)
    depends only on the input and the seed.
    """
    rows = sorted(pieces)
    path = storage.join(directory, f"sample-{file_index:05d}.jsonl")  # as SAMPLE_FILE says
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write("".join(json.dumps({"u": u, "subset": subset, "text": piece}) + "\n"
                             for u, subset, piece in rows).encode())
    return path


class DrawTokenizerSample(beam.PTransform):
    """PCollection[InputFile] -> sample files in ``directory`` (+ the quotas, for the report)."""

    def __init__(self, *, config: ReadConfig, sample_bytes: int, seed: int, directory: str,
                 max_piece_bytes: int, fence: Fence = NO_FENCE):
        super().__init__()
        self._fence = fence  # checked before each sample file is committed
        self._config = config
        self._sample_bytes = sample_bytes
        self._seed = seed
        self._directory = directory
        self._max_piece_bytes = max_piece_bytes

    def expand(self, files):
        sample_bytes = self._sample_bytes
        totals = (
            files
            | "ReadForTotals" >> beam.ParDo(_TotalsFn(self._config))
            | "SumPerSubset" >> beam.CombinePerKey(sum)
            | "ToDict" >> beam.combiners.ToDict()
        )
        rates = totals | "InclusionRates" >> beam.Map(
            lambda t: {
                name: quota / t[name]
                for name, quota in allocate_quotas(t, sample_bytes=sample_bytes).items()
                if t[name]
            }
        )
        kept = files | "ReadAndDraw" >> beam.ParDo(
            _DrawFn(config=self._config, seed=self._seed, max_piece_bytes=self._max_piece_bytes),
            rates=beam.pvalue.AsSingleton(rates),
        )
        directory, fence = self._directory, self._fence
        (
            kept
            | "GroupByInputFile" >> beam.GroupByKey()
            | "WriteSample" >> beam.MapTuple(
                lambda index, pieces: write_sample_file(pieces, directory=directory,
                                                        file_index=index, fence=fence))
        )
        return rates


def sample_files(directory: str, *, temporary: bool = False) -> list[str]:
    """The sample files in ``directory`` (file-system paths, sorted; with ``temporary``, an
    interrupted write's too); none when it does not exist."""
    fs, stripped = storage.filesystem(directory)
    try:
        names = fs.ls(stripped, detail=False)
    except FileNotFoundError:
        return []
    patterns = (SAMPLE_FILE, _SAMPLE_TMP) if temporary else (SAMPLE_FILE,)
    return sorted(name for name in names
                  if any(p.fullmatch(name.rstrip("/").rsplit("/", 1)[-1]) for p in patterns))


def remove_sample(directory: str) -> None:
    """Remove the sample files (an earlier run's, or this run's once trained on), and the
    directory if nothing else is in it; a user's files there stay."""
    fs, stripped = storage.filesystem(directory)
    for path in sample_files(directory, temporary=True):
        with contextlib.suppress(FileNotFoundError):
            fs.rm(path)
    if storage.is_local(fs):  # object stores have no directories (rmdir could mean a bucket)
        with contextlib.suppress(OSError):  # not empty: the user's files are in it
            fs.rmdir(stripped)


def load_sample(directory: str) -> list[tuple[str, str]]:
    """All sample pieces as (subset, text), in priority order (deterministic for a seed)."""
    fs, _ = storage.filesystem(directory)
    rows = []
    for path in sample_files(directory):
        with fs.open(path, "rb") as handle:
            for line in handle:
                row = json.loads(line)
                rows.append((row["u"], row["subset"], row["text"]))
    rows.sort(key=lambda row: (row[0], row[1]))
    return [(subset, text) for _, subset, text in rows]
