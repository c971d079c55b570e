"""Stage 2, Tokenize: Chunk -> TokenizedChunk (one id array per document, subset stats).

The SentencePiece model is loaded once per worker in ``DoFn.setup()``, where the encoder
backend (``--encoder``, see ``tokenizer.backends``) and its exactness guard
(``tokenizer.guard.ChunkEncoder``) are built; a whole chunk is encoded in one batched call.
Ids are the documented encoding: ``SentencePieceProcessor.encode``'s, a literal U+2581 as its
byte pieces.

How the worker's cores are used is decided in ``setup()`` too, from the backend:

* a backend that releases the GIL (gigatoken) encodes chunks in threads of this process
  (one per core with ``pool_if_auto``): no second copy of the model, and the encoding runs
  while this thread reads, packs and writes;
* the sentencepiece backend's word cache is Python, which holds the GIL, so chunks go to a
  pool of encoder processes (one per core with ``pool_if_auto``), each with its own model and
  cache;
* ``processes=1``: encode in this thread; ``processes > 1``: a pool of processes whatever the
  backend.

Results are emitted in input order (a FIFO of futures), so the output does not depend on the
threads or the pool; the last ones are emitted in ``finish_bundle``, which Beam calls
upstream-first, before the downstream writer finishes. Each chunk also yields its
``EncodeStats`` on the ``encoder_stats`` output, for the manifest.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import logging
import multiprocessing
import os

import apache_beam as beam
import numpy as np
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.read.chunk_coder import register
from pipeline.read.stage import Chunk
from pipeline.tokenize.subset_stats import SubsetStats
from tokenizer import pool_worker
from tokenizer.spec import SPACE_SYMBOL

WORKERS_NAMESPACE = "pilepack.workers"
ENCODER_STATS = "encoder_stats"

log = logging.getLogger("pilepack")


@register
@dataclasses.dataclass(frozen=True)
class TokenizedChunk:
    file_index: int
    chunk_index: int
    documents: tuple[np.ndarray, ...]
    subsets: dict[str, SubsetStats]
    repeats: tuple[int, ...] = ()  # the chunk's copies per document (pipeline.quality.mixture)
    before: dict | None = None  # subset stats before the mixture's copies (pipeline.quality.mixture)
    input_offset: int = 0  # see pipeline.read.stage.Chunk

    def approx_bytes(self) -> int:
        return sum(ids.nbytes for ids in self.documents)


def subset_stats(chunk: Chunk, token_arrays, *, lossless_space_symbol: bool = True,
                 copies: bool = True) -> dict[str, SubsetStats]:
    """Per-subset totals of one chunk. A literal U+2581 is encoded as its byte pieces, so every
    document decodes back exactly; only a model without byte pieces (``lossless_space_symbol``
    False) decodes U+2581 as a space, and such documents are counted as lossy. With a mixture
    (``chunk.repeats``) a document counts once per copy written, or with ``copies=False`` once
    (the totals before the mixture, documents with 0 copies included)."""
    stats: dict[str, SubsetStats] = {}
    repeats = chunk.repeats if copies and chunk.repeats else (1,) * len(chunk.documents)
    for doc, ids, count in zip(chunk.documents, token_arrays, repeats):
        if not count:
            continue
        entry = stats.setdefault(doc.subset, SubsetStats())
        for _ in range(count):
            entry.count_document(text_bytes=doc.text_bytes, tokens=len(ids),
                                 lossy=not lossless_space_symbol and SPACE_SYMBOL in doc.text)
    return stats


class _TokenizeFn(beam.DoFn):
    def __init__(self, *, model_path: str, num_threads: int, processes: int, pool_if_auto: bool,
                 encoder: str = "auto", on_mismatch: str = "fail", check_every: int = 64,
                 file_paths: tuple[str, ...] = ()):
        self._model_path = model_path
        self._num_threads = num_threads
        self._requested_processes = processes
        self._pool_if_auto = pool_if_auto
        self._guard = {"encoder": encoder, "on_mismatch": on_mismatch,
                       "check_every": check_every}
        self._file_paths = tuple(file_paths)
        self._encoder = None
        self._pool = None

    def setup(self):
        from tokenizer.encoder import load_model_bytes, usable_cores
        from tokenizer.guard import ChunkEncoder

        model = load_model_bytes(self._model_path)
        # Decided here, on the worker: its own cores, not the launching machine's.
        cores = usable_cores()
        workers = self._requested_processes or (cores if self._pool_if_auto else 1)
        # A backend that releases the GIL encodes in this process's threads (below), while this
        # thread parses, packs and writes: it must not hold the GIL meanwhile.
        threaded = not self._requested_processes and (self._num_threads or workers) > 1
        self._encoder = ChunkEncoder(model_proto=model, num_threads=1, gil_free=threaded,
                                     **self._guard)
        backend = self._encoder.backend
        if self._encoder.reason:
            log.warning("encoder %s (--encoder=%s): %s", backend.name, self._guard["encoder"],
                        self._encoder.reason)
        self._lossless = backend.lossless_space_symbol
        if backend.releases_gil and not self._requested_processes:
            # Threads of this process (measured faster and smaller than processes: BENCHMARKS).
            workers = self._num_threads or workers
            self._processes = workers
            self._pool = concurrent.futures.ThreadPoolExecutor(workers) if workers > 1 else None
            self._encode = self._encoder.encode
        elif workers > 1:
            # spawn, not fork: this process runs Beam's and TensorFlow's threads.
            options = dict(self._guard, encoder=backend.name)
            self._encoder = None  # each process has its own
            self._processes = workers
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=pool_worker.init, initargs=(model, os.getpid(), options),
            )
            # Start every process now, while this one goes on reading.
            for _ in range(workers):
                self._pool.submit(pool_worker.warm_up)
            self._encode = pool_worker.encode
        else:
            # In this thread, the backend using --num_threads threads for each chunk.
            self._processes = 1
            # 0 = every core only for a worker that has the machine to itself (no N x N threads
            # when a runner already starts a worker per core).
            threads = self._num_threads or (cores if self._pool_if_auto else 1)
            if threads != 1:
                self._encoder = ChunkEncoder(model_proto=model, num_threads=threads,
                                             **self._guard)
            self._encode = self._encoder.encode

    def start_bundle(self):
        self._pending = collections.deque()

    def process(self, chunk: Chunk):
        # Which worker processes did the work (python -m pipeline.run prints how many).
        beam.metrics.Metrics.counter(WORKERS_NAMESPACE, f"pid-{os.getpid()}").inc()
        texts = [doc.text for doc in chunk.documents]
        lines = [doc.line for doc in chunk.documents]
        path = self._path(chunk.file_index)
        if self._pool is None:
            yield from self._results(chunk, *self._encode(texts, path=path, lines=lines))
            return
        self._pending.append((chunk, self._pool.submit(self._encode, texts, path=path,
                                                       lines=lines)))
        # Keep every worker busy, plus one chunk queued, and no more (bounded memory).
        while len(self._pending) > self._processes + 1:
            done, future = self._pending.popleft()
            yield from self._results(done, *future.result())

    def finish_bundle(self):
        while self._pending:
            chunk, future = self._pending.popleft()
            for item in self._results(chunk, *future.result()):
                if isinstance(item, beam.pvalue.TaggedOutput):
                    yield beam.pvalue.TaggedOutput(
                        item.tag, WindowedValue(item.value, 0, [GlobalWindow()]))
                else:
                    yield WindowedValue(item, 0, [GlobalWindow()])

    def teardown(self):
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def _path(self, file_index: int) -> str:
        if 0 <= file_index < len(self._file_paths):
            return self._file_paths[file_index]
        return f"input file {file_index}"

    def _results(self, chunk: Chunk, ids, stats):
        beam.metrics.Metrics.counter("tokenize", "documents").inc(len(ids))
        yield TokenizedChunk(
            file_index=chunk.file_index,
            chunk_index=chunk.chunk_index,
            documents=tuple(ids),
            subsets=subset_stats(chunk, ids, lossless_space_symbol=self._lossless),
            repeats=chunk.repeats,
            before=subset_stats(chunk, ids, lossless_space_symbol=self._lossless, copies=False)
            if chunk.repeats else None,
            input_offset=chunk.input_offset,
        )
        yield beam.pvalue.TaggedOutput(ENCODER_STATS, stats)


class Tokenize(beam.PTransform):
    """PCollection[Chunk] -> {chunks: TokenizedChunk, encoder_stats: EncodeStats}.

    ``num_threads`` 0: all of the worker's cores. ``processes`` 0: one encoder per worker core
    when ``pool_if_auto`` (the in-process DirectRunner, one worker for the whole machine) --
    threads for a backend that releases the GIL, else processes -- and otherwise encode in the
    worker itself (runners that already run a worker per core). ``encoder``,
    ``on_mismatch``, ``check_every``: see ``tokenizer.guard.ChunkEncoder``; ``file_paths``
    (by file index) name documents in the guard's errors and sample them.
    """

    def __init__(self, *, model_path: str, num_threads: int = 0, processes: int = 0,
                 pool_if_auto: bool = False, encoder: str = "auto", on_mismatch: str = "fail",
                 check_every: int = 64, file_paths: tuple[str, ...] = ()):
        super().__init__()
        self._fn = _TokenizeFn(model_path=model_path, num_threads=num_threads,
                               processes=processes, pool_if_auto=pool_if_auto, encoder=encoder,
                               on_mismatch=on_mismatch, check_every=check_every,
                               file_paths=file_paths)

    def expand(self, chunks):
        return chunks | "Encode" >> beam.ParDo(self._fn).with_output_types(
            TokenizedChunk).with_outputs(ENCODER_STATS,
                                                                       main="chunks")
