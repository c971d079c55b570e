"""Stage 2, Tokenize: Chunk -> TokenizedChunk (one id array per document, subset stats).

The SentencePiece model is loaded once per worker in ``DoFn.setup()``; a whole chunk is
encoded in one batched, multi-threaded call (``tokenizer.encoder.CachedEncoder``), whose ids
are identical to ``SentencePieceProcessor.encode``.
"""

from __future__ import annotations

import collections
import dataclasses

import apache_beam as beam
import numpy as np

from pipeline.read import Chunk


@dataclasses.dataclass(frozen=True)
class TokenizedChunk:
    file_index: int
    chunk_index: int
    documents: tuple[np.ndarray, ...]
    # subset -> [documents, text bytes, tokens]
    subsets: dict


def subset_stats(chunk: Chunk, token_arrays) -> dict:
    stats = collections.defaultdict(lambda: [0, 0, 0])
    for doc, ids in zip(chunk.documents, token_arrays):
        entry = stats[doc.subset]
        entry[0] += 1
        entry[1] += doc.text_bytes
        entry[2] += len(ids)
    return dict(stats)


class _TokenizeFn(beam.DoFn):
    def __init__(self, *, model_path: str, num_threads: int):
        self._model_path = model_path
        self._num_threads = num_threads
        self._encoder = None

    def setup(self):
        from tokenizer.encoder import CachedEncoder, load_model_bytes

        self._encoder = CachedEncoder(
            model_proto=load_model_bytes(self._model_path), num_threads=self._num_threads
        )

    def process(self, chunk: Chunk):
        ids = self._encoder.encode_batch([doc.text for doc in chunk.documents])
        beam.metrics.Metrics.counter("tokenize", "documents").inc(len(ids))
        yield TokenizedChunk(
            file_index=chunk.file_index,
            chunk_index=chunk.chunk_index,
            documents=tuple(ids),
            subsets=subset_stats(chunk, ids),
        )


class Tokenize(beam.PTransform):
    """PCollection[Chunk] -> PCollection[TokenizedChunk]."""

    def __init__(self, *, model_path: str, num_threads: int):
        super().__init__()
        self._model_path = model_path
        self._num_threads = num_threads

    def expand(self, chunks):
        return chunks | "Encode" >> beam.ParDo(
            _TokenizeFn(model_path=self._model_path, num_threads=self._num_threads)
        )
