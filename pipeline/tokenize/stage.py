"""Stage 2, Tokenize: Chunk -> TokenizedChunk (one id array per document, subset stats).

The SentencePiece model is loaded once per worker in ``DoFn.setup()``, where the encoder
backend (``--encoder``, see ``tokenizer.backends``) and its exactness guard
(``tokenizer.guard.ChunkEncoder``) are built; a whole chunk is encoded in one batched call.
Ids are the documented encoding: ``SentencePieceProcessor.encode``'s, a literal U+2581 as its
byte pieces.

How the worker's cores are used (threads, a pool of encoder processes, or this thread) is
decided in ``setup()`` too, by ``pipeline.tokenize.encoding_plan.plan_encoding``.

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
from pipeline.tokenize.encoding_plan import PROCESSES, THREADS, EncodingPlan, plan_encoding
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
    before: dict | None = None  # subset stats before the mixture's copies (quality.mixture)
    input_offset: int = 0  # see pipeline.read.stage.Chunk
    input_start: int = 0  # see pipeline.read.stage.Chunk

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
    def __init__(self, *, model_path: str, threads: int, processes: int, pool_if_auto: bool,
                 encoder: str = "auto", on_mismatch: str = "fail", check_every: int = 64,
                 file_paths: tuple[str, ...] = (), committed=None):
        self._model_path = model_path
        self._committed = committed  # pipeline.write.committed_parts.CommittedParts, or None
        self._requested = {"requested_threads": threads, "requested_processes": processes,
                           "pool_if_auto": pool_if_auto}
        self._guard = {"encoder": encoder, "on_mismatch": on_mismatch,
                       "check_every": check_every}
        self._file_paths = tuple(file_paths)
        self._encoder = None
        self._pool = None

    def setup(self):
        from tokenizer.encoder import load_model_bytes, usable_cores

        model = load_model_bytes(self._model_path)
        facts = dict(self._requested, cores=usable_cores())  # this worker's cores
        # Whether the backend releases the GIL is known once it is built (--encoder=auto): built
        # as planned for one that does; for one that does not, rebuilt only if its plan wants
        # other threads (a pool of processes builds its own, by the backend's name).
        plan = plan_encoding(**facts, releases_gil=True)
        encoder = self._chunk_encoder(model, plan)
        backend = encoder.backend
        if encoder.reason:
            log.warning("encoder %s (--encoder=%s): %s", backend.name, self._guard["encoder"],
                        encoder.reason)
        if not backend.releases_gil:
            built, plan = plan, plan_encoding(**facts, releases_gil=False)
            if plan.pool != PROCESSES and (plan.encoder_threads, plan.gil_free) != (
                    built.encoder_threads, built.gil_free):
                encoder = self._chunk_encoder(model, plan)
        self._lossless = backend.lossless_space_symbol
        self._workers = plan.workers
        if plan.pool == PROCESSES:
            self._encoder = None  # each process has its own
            self._pool = self._process_pool(model, plan.workers, encoder=backend.name)
            self._encode = pool_worker.encode
            return
        self._encoder = encoder
        self._encode = encoder.encode
        self._pool = (concurrent.futures.ThreadPoolExecutor(plan.workers)
                      if plan.pool == THREADS else None)

    def _chunk_encoder(self, model: bytes, plan: EncodingPlan):
        from tokenizer.guard import ChunkEncoder

        return ChunkEncoder(model_proto=model, num_threads=plan.encoder_threads,
                            gil_free=plan.gil_free, **self._guard)

    def _process_pool(self, model: bytes, workers: int, *, encoder: str):
        # spawn, not fork: this process runs Beam's and TensorFlow's threads.
        pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=pool_worker.init,
            initargs=(model, os.getpid(), dict(self._guard, encoder=encoder)),
        )
        # Start every process now, while this one goes on reading.
        for _ in range(workers):
            pool.submit(pool_worker.warm_up)
        return pool

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
        while len(self._pending) > self._workers + 1:
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
        if self._committed is not None:  # before the chunk goes on to its part (fused)
            self._committed.commit_encode(chunk.file_index, chunk.chunk_index, stats=stats)
        yield TokenizedChunk(
            file_index=chunk.file_index,
            chunk_index=chunk.chunk_index,
            documents=tuple(ids),
            subsets=subset_stats(chunk, ids, lossless_space_symbol=self._lossless),
            repeats=chunk.repeats,
            before=subset_stats(chunk, ids, lossless_space_symbol=self._lossless, copies=False)
            if chunk.repeats else None,
            input_offset=chunk.input_offset,
            input_start=chunk.input_start,
        )
        yield beam.pvalue.TaggedOutput(ENCODER_STATS, stats)


class Tokenize(beam.PTransform):
    """PCollection[Chunk] -> {chunks: TokenizedChunk, encoder_stats: EncodeStats}.

    ``threads`` (``--encoder_threads``), ``processes`` (``--encode_processes``), 0 = auto, and
    ``pool_if_auto`` (the worker has the machine to itself: the in-process DirectRunner): see
    ``pipeline.tokenize.encoding_plan``. ``encoder``, ``on_mismatch``, ``check_every``: see
    ``tokenizer.guard.ChunkEncoder``; ``file_paths`` (by file index) name documents in the
    guard's errors and sample them; ``committed``
    (``pipeline.write.committed_parts.CommittedParts``): each chunk's EncodeStats is recorded
    for a rerun.
    """

    def __init__(self, *, model_path: str, threads: int = 0, processes: int = 0,
                 pool_if_auto: bool = False, encoder: str = "auto", on_mismatch: str = "fail",
                 check_every: int = 64, file_paths: tuple[str, ...] = (), committed=None):
        super().__init__()
        self._fn = _TokenizeFn(model_path=model_path, threads=threads, processes=processes,
                               pool_if_auto=pool_if_auto, encoder=encoder,
                               on_mismatch=on_mismatch, check_every=check_every,
                               file_paths=file_paths, committed=committed)

    def expand(self, chunks):
        return chunks | "Encode" >> beam.ParDo(self._fn).with_output_types(
            TokenizedChunk).with_outputs(ENCODER_STATS, main="chunks")
