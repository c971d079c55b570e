"""Stage 2, Tokenize: Chunk -> TokenizedChunk (one id array per document, subset stats).

The SentencePiece model is loaded once per worker in ``DoFn.setup()``; a whole chunk is
encoded in one batched call (``tokenizer.encoder.CachedEncoder``), whose ids are identical to
``SentencePieceProcessor.encode``.

Most of the encoder's time is Python (word split, cache look-ups), which holds the GIL, so
with ``processes > 1`` chunks are encoded in a pool of that many encoder processes (each with
its own model and cache) while this process reads, packs and writes: every core works even
with a single input file. Results are emitted in input order (a FIFO of futures), so the
output does not depend on the pool; the last ones are emitted in ``finish_bundle``, which Beam
calls upstream-first, before the downstream writer finishes.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import multiprocessing
import os

import apache_beam as beam
import numpy as np
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.read import Chunk
from pipeline.subset_stats import SubsetStats
from tokenizer import pool_worker
from tokenizer.spec import SPACE_SYMBOL

WORKERS_NAMESPACE = "pilepack.workers"


@dataclasses.dataclass(frozen=True)
class TokenizedChunk:
    file_index: int
    chunk_index: int
    documents: tuple[np.ndarray, ...]
    subsets: dict[str, SubsetStats]


def subset_stats(chunk: Chunk, token_arrays) -> dict[str, SubsetStats]:
    """Per-subset totals of one chunk. SentencePiece escapes ' ' to U+2581 before encoding, so
    a literal U+2581 decodes as a space: such documents are kept and counted as lossy."""
    stats: dict[str, SubsetStats] = {}
    for doc, ids in zip(chunk.documents, token_arrays):
        entry = stats.setdefault(doc.subset, SubsetStats())
        entry.documents += 1
        entry.bytes += doc.text_bytes
        entry.tokens += len(ids)
        entry.lossy_documents += SPACE_SYMBOL in doc.text
    return stats


class _TokenizeFn(beam.DoFn):
    def __init__(self, *, model_path: str, num_threads: int, processes: int, pool_if_auto: bool):
        self._model_path = model_path
        self._num_threads = num_threads
        self._requested_processes = processes
        self._pool_if_auto = pool_if_auto
        self._encoder = None
        self._pool = None

    def setup(self):
        from tokenizer.encoder import CachedEncoder, load_model_bytes, usable_cores

        # Decided here, on the worker: its own cores, not the launching machine's.
        self._processes = self._requested_processes or (
            usable_cores() if self._pool_if_auto else 1)
        model = load_model_bytes(self._model_path)
        if self._processes > 1:
            # spawn, not fork: this process runs Beam's and TensorFlow's threads.
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self._processes, mp_context=multiprocessing.get_context("spawn"),
                initializer=pool_worker.init, initargs=(model, os.getpid()),
            )
            # Start every process now, while this one goes on reading.
            for _ in range(self._processes):
                self._pool.submit(pool_worker.warm_up)
        else:
            self._encoder = CachedEncoder(model_proto=model, num_threads=self._num_threads)

    def start_bundle(self):
        self._pending = collections.deque()

    def process(self, chunk: Chunk):
        # Which worker processes did the work (python -m pipeline.run prints how many).
        beam.metrics.Metrics.counter(WORKERS_NAMESPACE, f"pid-{os.getpid()}").inc()
        texts = [doc.text for doc in chunk.documents]
        if self._pool is None:
            yield self._result(chunk, self._encoder.encode_batch(texts))
            return
        self._pending.append((chunk, self._pool.submit(pool_worker.encode, texts)))
        # Keep every process busy, plus one chunk queued, and no more (bounded memory).
        while len(self._pending) > self._processes + 1:
            done, future = self._pending.popleft()
            yield self._result(done, future.result())

    def finish_bundle(self):
        while self._pending:
            chunk, future = self._pending.popleft()
            yield WindowedValue(self._result(chunk, future.result()), 0, [GlobalWindow()])

    def teardown(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    @staticmethod
    def _result(chunk: Chunk, ids) -> TokenizedChunk:
        beam.metrics.Metrics.counter("tokenize", "documents").inc(len(ids))
        return TokenizedChunk(
            file_index=chunk.file_index,
            chunk_index=chunk.chunk_index,
            documents=tuple(ids),
            subsets=subset_stats(chunk, ids),
        )


class Tokenize(beam.PTransform):
    """PCollection[Chunk] -> PCollection[TokenizedChunk].

    ``num_threads`` 0: all of the worker's cores. ``processes`` 0: a pool of one encoder
    process per worker core when ``pool_if_auto`` (the in-process DirectRunner, one worker for
    the whole machine), else encode in the worker itself (runners that already run a worker
    per core).
    """

    def __init__(self, *, model_path: str, num_threads: int = 0, processes: int = 0,
                 pool_if_auto: bool = False):
        super().__init__()
        self._fn = _TokenizeFn(model_path=model_path, num_threads=num_threads,
                               processes=processes, pool_if_auto=pool_if_auto)

    def expand(self, chunks):
        return chunks | "Encode" >> beam.ParDo(self._fn)
