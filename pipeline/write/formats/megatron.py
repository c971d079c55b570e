"""The ``megatron`` format (``--formats=...,megatron``): document parts -> Megatron pairs.

Megatron-Core's indexed dataset (``schemas.megatron_index``) holds documents, not packed
records: each document is its token ids followed by EOS, as Megatron's ``preprocess_data.py
--append-eod`` writes them. A chunk's documents, so written, are exactly its packed stream less
its leading EOS (``pipeline.write.pack``): ``d1 EOS d2 EOS ... dn EOS``.

A format built from documents (``pipeline.write.formats.base``): Pack keeps each chunk's
documents (``MegatronFormat.chunk_data``), WriteParts writes them as a *document part*
(``write_document_part``) beside its TFRecord part; once all exist, one small step plans the
pairs (``megatron_plan``: whole parts in the input's order, ~``--shard_bytes`` each), the plans are spread over the workers and
each pair is assembled on its own (``assemble_pair``): the parts' tokens copied into
``PREFIX.bin`` and their lengths into ``PREFIX.idx``, each committed atomically, hashed as
written. Like the shards, the pairs' names and bytes follow from the input and the options
alone, whatever the runner, workers, bundles or retries. The parts go with the TFRecord parts
when the manifest is committed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

import apache_beam as beam
import numpy as np

from common import storage
from common.errors import DataError
from pipeline.write.formats.base import DOCUMENTS, FormatFile, OutputFormat, entries
from pipeline.write.formats.megatron_plan import (
    MEGATRON_DIR,
    DocumentPartInfo,
    PairPlan,
    document_part_path,
    part_layout,
    plan_pairs,
)
from pipeline.write.pack import document_stream
from schemas.claim import NO_FENCE, Fence
from schemas.formats import MEGATRON
from schemas.megatron_index import BIN_SUFFIX, IDX_SUFFIX, document_dtype, encode_index


def write_document_part(*, file_index: int, chunk_index: int, epoch: int, tokens: np.ndarray,
                        lengths: np.ndarray, directory: str,
                        fence: Fence = NO_FENCE) -> DocumentPartInfo:
    """One chunk's documents (``tokens``: each followed by EOS, in Megatron's dtype; their
    ``lengths``, EOS included) -> a part file: the tokens, then the lengths as int32."""
    relative = document_part_path(file_index=file_index, chunk_index=chunk_index, epoch=epoch)
    data = tokens.astype(tokens.dtype.newbyteorder("<"), copy=False).tobytes()
    with storage.atomic_open(storage.join(directory, relative), "wb",
                             before_commit=fence.for_file(relative)) as handle:
        handle.write(data)
        handle.write(np.asarray(lengths, dtype="<i4").tobytes())
    return DocumentPartInfo(file_index=file_index, chunk_index=chunk_index, path=relative,
                            documents=len(lengths), tokens=len(tokens), bytes=len(data),
                            epoch=epoch)


@dataclasses.dataclass(frozen=True)
class PairInfo(FormatFile):
    """One written pair, as the manifest lists it."""

    format = MEGATRON

    prefix: str  # relative to the dataset directory, without .bin/.idx
    documents: int
    tokens: int
    bin_bytes: int
    bin_sha256: str
    idx_bytes: int
    idx_sha256: str

    def to_json(self) -> dict:
        return {"prefix": self.prefix, "documents": self.documents, "tokens": self.tokens,
                "bin": {"path": self.prefix + BIN_SUFFIX, "bytes": self.bin_bytes,
                        "sha256": self.bin_sha256},
                "idx": {"path": self.prefix + IDX_SUFFIX, "bytes": self.idx_bytes,
                        "sha256": self.idx_sha256}}


def _read_part(directory: str, part: DocumentPartInfo, *, pair: str) -> bytes:
    fs, stripped = storage.filesystem(storage.join(directory, part.path))
    with fs.open(stripped, "rb") as handle:
        data = handle.read()
    offset, size = part_layout(part)
    if len(data) != offset + size:
        raise DataError(f"document part {part.path} has {len(data)} bytes, expected "
                        f"{offset + size}, while writing {pair}; it was changed or truncated "
                        "during the run: rerun")
    return data


def assemble_pair(plan: PairPlan, *, directory: str, dtype: str,
                  fence: Fence = NO_FENCE) -> PairInfo:
    """Write ``plan.prefix``.bin (the parts' tokens) and .idx (their lengths), atomically."""
    digest, size, lengths = hashlib.sha256(), 0, []
    bin_name = plan.prefix + BIN_SUFFIX
    with storage.atomic_open(storage.join(directory, bin_name), "wb",
                             before_commit=fence.for_file(bin_name)) as out:
        for part in plan.parts:
            data = memoryview(_read_part(directory, part, pair=bin_name))
            offset, _ = part_layout(part)
            out.write(data[:offset])
            digest.update(data[:offset])
            size += offset
            # A copy of the small lengths, not a view: the part's bytes go before the next.
            lengths.append(np.frombuffer(data, dtype="<i4", offset=offset).copy())
            del data
    index = encode_index(np.concatenate(lengths) if lengths else np.zeros(0, "<i4"),
                         dtype=dtype)
    idx_name = plan.prefix + IDX_SUFFIX
    with storage.atomic_open(storage.join(directory, idx_name), "wb",
                             before_commit=fence.for_file(idx_name)) as out:
        out.write(index)
    return PairInfo(prefix=plan.prefix, documents=plan.documents, tokens=plan.tokens,
                    bin_bytes=size, bin_sha256=digest.hexdigest(), idx_bytes=len(index),
                    idx_sha256=hashlib.sha256(index).hexdigest())


class _AssemblePairFn(beam.DoFn):
    def __init__(self, *, directory: str, dtype: str, fence: Fence = NO_FENCE):
        self._directory = directory
        self._dtype = dtype
        self._fence = fence

    def process(self, plan: PairPlan):
        yield assemble_pair(plan, directory=self._directory, dtype=self._dtype,
                            fence=self._fence)
        beam.metrics.Metrics.counter("write", "megatron_pairs").inc()


class WriteMegatron(beam.PTransform):
    """PCollection[DocumentPartInfo] -> PCollection[PairInfo] (after every part is written)."""

    def __init__(self, *, directory: str, split: str, shard_bytes: int, dtype: str,
                 fence: Fence = NO_FENCE):
        super().__init__()
        self._directory = directory
        self._fence = fence
        self._split = split
        self._shard_bytes = shard_bytes
        self._dtype = dtype

    def expand(self, parts):
        split, shard_bytes = self._split, self._shard_bytes
        token_bytes = np.dtype(self._dtype).itemsize
        return (
            parts
            | "AllDocumentParts" >> beam.combiners.ToList()
            | "PlanPairs" >> beam.FlatMap(lambda infos: plan_pairs(
                infos, split=split, shard_bytes=shard_bytes, token_bytes=token_bytes))
            | "SpreadPairs" >> beam.Reshuffle()
            | "AssemblePairs" >> beam.ParDo(_AssemblePairFn(directory=self._directory,
                                                            dtype=self._dtype, fence=self._fence))
        )


@dataclasses.dataclass(frozen=True)
class MegatronFormat(OutputFormat):
    """``megatron``: each chunk's documents -> document parts -> pairs of ~``shard_bytes``."""

    name = MEGATRON
    built_from = DOCUMENTS
    folder = MEGATRON_DIR

    @property
    def dtype(self) -> str:
        return document_dtype(self.context.vocab_size)

    @classmethod
    def file_pattern(cls, numbered: str) -> str:
        pair = "|".join(re.escape(suffix) for suffix in (BIN_SUFFIX, IDX_SUFFIX))
        return rf"{MEGATRON_DIR}/{numbered}(?:{pair})"  # megatron_plan.pair_prefix

    @classmethod
    def listed_entries(cls, doc: dict) -> list[dict]:
        pairs = entries((doc.get(MEGATRON) or {}).get("files"))
        return entries([pair.get(key) for pair in pairs for key in ("bin", "idx")])

    @classmethod
    def manifest_section(cls, files: list, *, shards: list, vocab_size: int) -> dict:
        """Its pairs (``PairInfo``), in order, and their totals."""
        pairs = sorted(files, key=lambda p: p.prefix)
        return {MEGATRON: {"dtype": document_dtype(vocab_size), "eod": "eos",
                           "documents": sum(p.documents for p in pairs),
                           "tokens": sum(p.tokens for p in pairs),
                           "files": [p.to_json() for p in pairs]}}

    @classmethod
    def accounting_problem(cls, files: list, *, copies: int) -> str | None:
        """The pairs must hold every document copy the part files hold, each exactly once:
        none lost, none reported twice, and pairs whenever documents were written."""
        paired = sum(pair.documents for pair in files)
        if paired == copies:
            return None
        return (f"the part files hold {copies:,} documents, but the {len(files)} Megatron pairs "
                f"reported {paired:,}: a pair was lost or reported twice")

    def chunk_data(self, documents, *, eos_id: int) -> tuple:
        """(tokens, lengths): ``pipeline.write.pack.document_stream`` in Megatron's dtype."""
        return document_stream(documents, eos_id=eos_id, dtype=np.dtype(self.dtype))

    def write_part(self, data: tuple, *, file_index: int, chunk_index: int,
                   epoch: int) -> DocumentPartInfo:
        tokens, lengths = data
        return write_document_part(file_index=file_index, chunk_index=chunk_index, epoch=epoch,
                                   tokens=tokens, lengths=lengths,
                                   directory=self.context.directory, fence=self.context.fence)

    def assemble(self, parts):
        context = self.context
        return parts | "WriteMegatron" >> WriteMegatron(
            directory=context.directory, split=context.split, shard_bytes=context.shard_bytes,
            dtype=self.dtype, fence=context.fence)
