"""How a Tokenize worker uses its cores: threads, a pool of encoder processes, or one thread.

A pure decision, made in ``DoFn.setup()`` on the worker (its own cores, not the launching
machine's), from the flags and two facts about where it runs:

* a backend that releases the GIL (gigatoken) encodes chunks in threads of this process (one
  per core with ``pool_if_auto``): no second copy of the model, and the encoding runs while
  the worker's main thread reads, packs and writes (BENCHMARKS.md, "How the pipeline uses
  the cores");
* the sentencepiece backend's word cache is Python, which holds the GIL, so chunks go to a
  pool of encoder processes (one per core with ``pool_if_auto``), each with its own model and
  cache;
* ``--encode_processes=1``: encode in the worker's thread, the backend itself using
  ``--encoder_threads`` threads for each chunk; ``--encode_processes=N`` (N > 1): a pool of N
  processes whatever the backend.

``0`` (auto) means every core only for a worker that has the machine to itself
(``pool_if_auto``: the in-process DirectRunner); a runner that already starts a worker per
core gets one encoder per worker, not N x N threads.
"""

from __future__ import annotations

import dataclasses

THREADS = "threads"
PROCESSES = "processes"
INLINE = "inline"


@dataclasses.dataclass(frozen=True)
class EncodingPlan:
    """What ``setup()`` builds.

    Attributes:
      pool: ``threads`` (encoder threads of this process), ``processes`` (spawned encoder
        processes, one model each) or ``inline`` (the calling thread).
      workers: Encoders encoding chunks at once (1 inline); one more chunk waits queued.
      encoder_threads: Threads the backend of this process uses for each chunk (more than 1
        only inline).
      gil_free: This process's encoder runs beside Python threads (see
        ``tokenizer.backends.open_backend``).
    """

    pool: str
    workers: int
    encoder_threads: int = 1
    gil_free: bool = False


def plan_encoding(*, requested_processes: int, requested_threads: int, cores: int,
                  pool_if_auto: bool, releases_gil: bool) -> EncodingPlan:
    """The plan for ``--encode_processes=requested_processes``,
    ``--encoder_threads=requested_threads`` (0 = auto, both), on a worker with ``cores``
    usable cores, for a backend that does or does not release the GIL (``releases_gil``).
    ``pool_if_auto``: the worker has the machine to itself, so auto means every core."""
    auto = cores if pool_if_auto else 1
    if releases_gil and not requested_processes:
        threads = requested_threads or auto
        if threads > 1:
            return EncodingPlan(pool=THREADS, workers=threads, gil_free=True)
        return EncodingPlan(pool=INLINE, workers=1)
    processes = requested_processes or auto
    if processes > 1:
        return EncodingPlan(pool=PROCESSES, workers=processes)
    return EncodingPlan(pool=INLINE, workers=1, encoder_threads=requested_threads or auto)
