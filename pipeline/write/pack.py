"""Stage 3, Pack: a chunk's token arrays -> fixed-length records of ``seq_len + 1`` tokens.

The chunk's documents become one stream, each document *preceded* by EOS (the EOS ends the
previous document and starts the next, like GPT-2's ``<|endoftext|>``) and the stream closed
by a final EOS::

    EOS d1 EOS d2 ... EOS dn EOS

Record ``i`` is ``stream[i*L : i*L + L + 1]`` (``L = seq_len``): consecutive records overlap
by one token, so ``inputs = r[:-1]`` and ``labels = r[1:]`` give every token after the leading
EOS exactly once as a label, with no loss between records. The final partial record is padded
with ``pad_id`` (``--last_record=pad``; mask = ``tokens != pad_id``) or dropped
(``--last_record=drop``, its tokens counted as dropped).

Worked example (tests assert these numbers): ``L = 4``, EOS = 1, PAD = 0, documents
``[5, 6, 7]`` and ``[8, 9]``. Stream ``[1, 5, 6, 7, 1, 8, 9, 1]`` (8 tokens, 7 labels):

* record 0: ``[1, 5, 6, 7, 1]``
* record 1: ``[1, 8, 9, 1, 0]`` (partial: 3 real labels, 1 padding token)

Dropping every record's first token and the padding, then splitting at EOS, gives the
documents back in order: this is how ``pipeline.roundtrip`` decodes a split.

With ``with_segments`` each record also gets ``segment_ids`` (1, 2, ... for each
EOS-started document segment inside the record; 0 on padding) and ``positions`` (index inside
the segment, restarting at 0 at each record start). For the example, record 1 gets segment ids
``[1, 1, 1, 2, 0]`` and positions ``[0, 1, 2, 0, 0]``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import apache_beam as beam
import numpy as np

from common.errors import DataError
from pipeline.read.chunk_coder import register
from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS, RecordSpec


@dataclasses.dataclass(frozen=True)
class PackStats:
    records: int = 0
    tokens: int = 0  # real (non-pad) label positions: each token trained on, counted once
    padding_tokens: int = 0
    partial_records: int = 0
    dropped_records: int = 0
    dropped_tokens: int = 0

    def __add__(self, other: PackStats) -> PackStats:
        return PackStats(**{field.name: getattr(self, field.name) + getattr(other, field.name)
                            for field in dataclasses.fields(self)})


def build_stream(documents: Sequence[np.ndarray], *, eos_id: int, dtype) -> np.ndarray:
    """``EOS d1 EOS d2 ... EOS dn EOS`` as one array (numpy concatenation, no Python loop)."""
    eos = np.array([eos_id], dtype=dtype)
    parts = [eos]
    for doc in documents:
        parts.append(doc.astype(dtype, copy=False))
        parts.append(eos)
    return np.concatenate(parts)


def document_stream(documents: Sequence[np.ndarray], *, eos_id: int, dtype
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The documents as a document format may hold them (``pipeline.write.formats``): each
    followed by EOS, ``d1 EOS d2 EOS ... dn EOS`` (the packed stream less its leading EOS), and their
    lengths, EOS included (int32)."""
    tokens = build_stream(documents, eos_id=eos_id, dtype=dtype)[1:]
    lengths = np.fromiter((len(doc) + 1 for doc in documents), dtype=np.int32,
                          count=len(documents))
    return tokens, lengths


def pack_stream(
    stream: np.ndarray, *, seq_len: int, pad_id: int, last_record: str
) -> tuple[np.ndarray, PackStats]:
    """Cut a stream into a [records, seq_len + 1] array (strided view copy, one allocation)."""
    n = len(stream)
    width = seq_len + 1
    if n < 2:
        return np.zeros((0, width), dtype=stream.dtype), PackStats()
    full = (n - 1) // seq_len
    # Records i < full are complete; tokens after full*seq_len (beyond the shared first
    # token) form the partial record.
    remainder = n - full * seq_len
    records = np.lib.stride_tricks.as_strided(
        stream, shape=(full, width), strides=(stream.strides[0] * seq_len, stream.strides[0])
    ).copy() if full else np.zeros((0, width), dtype=stream.dtype)
    stats = dict(records=full, tokens=full * seq_len)
    if remainder > 1:
        tail = stream[full * seq_len:]
        if last_record == "pad":
            padded = np.full((1, width), pad_id, dtype=stream.dtype)
            padded[0, : len(tail)] = tail
            records = np.concatenate([records, padded])
            stats["records"] += 1
            stats["tokens"] += len(tail) - 1
            stats.update(padding_tokens=width - len(tail), partial_records=1)
        else:
            stats.update(dropped_records=1, dropped_tokens=len(tail) - 1)
    return records, PackStats(**stats)


def segments_for(records: np.ndarray, *, eos_id: int, pad_id: int, index_dtype) -> tuple:
    """(segment_ids, positions) for packed records; a segment starts at each EOS."""
    is_pad = records == pad_id
    starts = records == eos_id
    # A record that starts mid-document starts a segment too.
    starts[:, 0] = True
    segment_ids = np.cumsum(starts, axis=1)
    segment_ids[is_pad] = 0
    index = np.arange(records.shape[1])
    start_index = np.where(starts, index, 0)
    positions = index - np.maximum.accumulate(start_index, axis=1)
    positions[is_pad] = 0
    return segment_ids.astype(index_dtype), positions.astype(index_dtype)


def pack_documents(
    documents: Sequence[np.ndarray],
    *,
    seq_len: int,
    eos_id: int,
    pad_id: int,
    last_record: str,
    dtype,
) -> tuple[np.ndarray, PackStats]:
    """Documents' token arrays -> ([records, seq_len + 1] array, stats)."""
    stream = build_stream(documents, eos_id=eos_id, dtype=np.int64)
    limit = np.iinfo(dtype).max
    if len(stream) and int(stream.max()) > limit:
        raise DataError(
            f"token id {int(stream.max())} does not fit the record dtype {np.dtype(dtype).name} "
            f"(max {limit}); the tokenizer's vocabulary is larger than the manifest says"
        )
    stream = stream.astype(dtype)
    return pack_stream(stream, seq_len=seq_len, pad_id=pad_id, last_record=last_record)


def epochs(documents: Sequence[np.ndarray], repeats: Sequence[int]):
    """(epoch, documents) for each epoch of a chunk: epoch ``e`` holds, in order, the
    documents repeated more than ``e`` times (``pipeline.quality.mixture``); no repeats: all, in
    epoch 0. Epoch 0 always comes, empty when every document has 0 copies.

    >>> [(e, len(d)) for e, d in epochs(["a", "b", "c"], [1, 3, 0])]
    [(0, 2), (1, 1), (2, 1)]
    """
    if not repeats:
        yield 0, documents
        return
    for epoch in range(max(1, max(repeats))):
        yield epoch, [doc for doc, count in zip(documents, repeats) if count > epoch]


@register
@dataclasses.dataclass(frozen=True)
class PackedChunk:
    file_index: int
    chunk_index: int
    features: dict  # feature name -> [records, seq_len + 1] array
    stats: PackStats
    subsets: dict  # subset -> pipeline.tokenize.subset_stats.SubsetStats
    epoch: int = 0  # copy number of the chunk's documents (pipeline.quality.mixture)
    before: dict | None = None  # subset stats before the mixture's copies (epoch 0 only)
    input_offset: int = 0  # see pipeline.read.stage.Chunk
    input_start: int = 0  # see pipeline.read.stage.Chunk
    documents: int = 0  # documents packed into these records (the manifest checks the sum)
    # Format name -> what that format keeps of the documents (its ``chunk_data``: numpy arrays),
    # for each format built from documents (pipeline.write.formats.base).
    format_data: dict = dataclasses.field(default_factory=dict)

    def approx_bytes(self) -> int:
        return (sum(array.nbytes for array in self.features.values())
                + sum(array.nbytes for data in self.format_data.values() for array in data))


class _PackFn(beam.DoFn):
    def __init__(self, *, spec: RecordSpec, eos_id: int, pad_id: int, last_record: str,
                 formats: Sequence = ()):
        self._spec = spec
        self._eos_id = eos_id
        self._pad_id = pad_id
        self._last_record = last_record
        self._formats = tuple(formats)

    def process(self, chunk):
        per_document = beam.metrics.Metrics.distribution("pack", "tokens_per_document")
        for ids in chunk.documents:
            per_document.update(len(ids))
        # Each epoch of the chunk is packed on its own; its statistics travel with epoch 0.
        for epoch, documents in epochs(chunk.documents, chunk.repeats):
            records, stats = pack_documents(
                documents,
                seq_len=self._spec.seq_len,
                eos_id=self._eos_id,
                pad_id=self._pad_id,
                last_record=self._last_record,
                dtype=np.dtype(self._spec.token_dtype),
            )
            features = {TOKENS: records}
            if self._spec.with_segments:
                features[SEGMENT_IDS], features[POSITIONS] = segments_for(
                    records, eos_id=self._eos_id, pad_id=self._pad_id,
                    index_dtype=np.dtype(self._spec.index_dtype),
                )
            format_data = {fmt.name: fmt.chunk_data(documents, eos_id=self._eos_id)
                           for fmt in self._formats}
            yield PackedChunk(chunk.file_index, chunk.chunk_index, features, stats,
                              chunk.subsets if epoch == 0 else {}, epoch=epoch,
                              before=chunk.before if epoch == 0 else None,
                              input_offset=chunk.input_offset, input_start=chunk.input_start,
                              documents=len(documents), format_data=format_data)


class Pack(beam.PTransform):
    """PCollection[TokenizedChunk] -> PCollection[PackedChunk]. ``formats``: the formats built
    from documents (``pipeline.write.formats.base.DOCUMENTS``); each chunk also carries what each
    keeps of its documents, under its name."""

    def __init__(self, *, spec: RecordSpec, eos_id: int, pad_id: int, last_record: str,
                 formats: Sequence = ()):
        super().__init__()
        self._fn = _PackFn(spec=spec, eos_id=eos_id, pad_id=pad_id, last_record=last_record,
                           formats=formats)

    def expand(self, chunks):
        return chunks | "PackRecords" >> beam.ParDo(self._fn).with_output_types(PackedChunk)
