"""encoding_plan.py: threads, encoder processes or one thread, for every combination of
--encode_processes, --encoder_threads, the worker's cores, the runner and the backend."""

import pytest

from pipeline.tokenize.encoding_plan import (
    INLINE,
    PROCESSES,
    THREADS,
    EncodingPlan,
    plan_encoding,
)

GIL_FREE, HOLDS_GIL = True, False  # releases_gil: gigatoken, sentencepiece (word cache)
WHOLE, PER_CORE = True, False  # pool_if_auto: in-process DirectRunner, a worker per core


@pytest.mark.parametrize("processes, threads, cores, pool_if_auto, releases_gil, plan", [
    # The default on the in-process DirectRunner, gigatoken: a thread per core, beside the
    # worker's main thread, which needs the backend's GIL-free batch call.
    (0, 0, 8, WHOLE, GIL_FREE, EncodingPlan(THREADS, 8, gil_free=True)),
    # --encoder_threads sizes that thread pool, not the cores.
    (0, 3, 8, WHOLE, GIL_FREE, EncodingPlan(THREADS, 3, gil_free=True)),
    # A runner that starts a worker per core: auto is one thread, no pool.
    (0, 0, 8, PER_CORE, GIL_FREE, EncodingPlan(INLINE, 1)),
    # ... unless threads are asked for.
    (0, 4, 8, PER_CORE, GIL_FREE, EncodingPlan(THREADS, 4, gil_free=True)),
    # One core: nothing to run beside the worker's thread; two: a pool of two.
    (0, 0, 1, WHOLE, GIL_FREE, EncodingPlan(INLINE, 1)),
    (0, 0, 2, WHOLE, GIL_FREE, EncodingPlan(THREADS, 2, gil_free=True)),
    # --encoder_threads=1: the caller's only thread (gigatoken's per-text call, word cache).
    (0, 1, 8, WHOLE, GIL_FREE, EncodingPlan(INLINE, 1)),
    # sentencepiece holds the GIL: a process per core instead of threads.
    (0, 0, 8, WHOLE, HOLDS_GIL, EncodingPlan(PROCESSES, 8)),
    # ... sized by the cores, not by --encoder_threads.
    (0, 3, 8, WHOLE, HOLDS_GIL, EncodingPlan(PROCESSES, 8)),
    # A worker per core: in this thread, one SentencePiece thread.
    (0, 0, 8, PER_CORE, HOLDS_GIL, EncodingPlan(INLINE, 1)),
    # ... where --encoder_threads is SentencePiece's own threads for each chunk.
    (0, 4, 8, PER_CORE, HOLDS_GIL, EncodingPlan(INLINE, 1, encoder_threads=4)),
    # One core: no pool of one process.
    (0, 0, 1, WHOLE, HOLDS_GIL, EncodingPlan(INLINE, 1)),
    # One core and threads asked for: the backend's own threads, in this thread.
    (0, 2, 1, WHOLE, HOLDS_GIL, EncodingPlan(INLINE, 1, encoder_threads=2)),
    # --encode_processes=1 with the machine to itself: the backend's own threads, one per core.
    (1, 0, 8, WHOLE, GIL_FREE, EncodingPlan(INLINE, 1, encoder_threads=8)),
    (1, 0, 8, WHOLE, HOLDS_GIL, EncodingPlan(INLINE, 1, encoder_threads=8)),
    # --encode_processes=1 on a worker per core: one thread, however many cores it sees.
    (1, 0, 8, PER_CORE, GIL_FREE, EncodingPlan(INLINE, 1)),
    # --encode_processes=1 --encoder_threads=2: two threads of the backend.
    (1, 2, 8, PER_CORE, HOLDS_GIL, EncodingPlan(INLINE, 1, encoder_threads=2)),
    # --encode_processes=N > 1: a pool of N processes whatever the backend and threads.
    (2, 0, 8, WHOLE, GIL_FREE, EncodingPlan(PROCESSES, 2)),
    (3, 5, 1, PER_CORE, HOLDS_GIL, EncodingPlan(PROCESSES, 3)),
])
def test_plan_encoding(processes, threads, cores, pool_if_auto, releases_gil, plan):
    assert plan_encoding(requested_processes=processes, requested_threads=threads, cores=cores,
                         pool_if_auto=pool_if_auto, releases_gil=releases_gil) == plan
