"""Trainer input throughput: tokens/s per core that tf.data delivers from local shards.

    python -m bench.input_bench [--manifest=PATH] [--seq_len=2048] [--records=40000]

Reads, parses and batches shards exactly as training does (``trainer.data.make_dataset``:
interleaved reads, windowed shuffle, batch, parse), on 1 thread and on all cores, and reports
tokens/s per core (target: >= 20 M). Without ``--manifest`` it writes a synthetic dataset of
``--records`` uint16 records to a temporary local directory first. The shards are read once
before timing, so the figure is for shards in the page cache (local NVMe reads are faster
than this pipeline; network file systems may not be).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.datasets import write_dataset
from schemas import manifest
from trainer.data import make_dataset, plan_input


@dataclasses.dataclass(frozen=True)
class Options:
    manifest: str = flag("", help="an existing dataset's manifest; empty: a synthetic dataset")
    seq_len: int = flag(2048, help="tokens per sequence of the synthetic dataset")
    records: int = flag(40_000, help="records of the synthetic dataset")
    shards: int = flag(8, help="shards of the synthetic dataset")
    batch: int = flag(32, help="records per batch")
    seconds: float = flag(10.0, help="timed seconds per measurement, after one warm-up pass")


def synthetic_dataset(
    directory: str, *, records: int, seq_len: int, shards: int, vocab_size: int = 32768
) -> str:
    """``records`` random uint16 records in ``shards`` shards (datagen.datasets)."""
    rng = np.random.default_rng(0)

    def shard():
        for _ in range(records // shards):
            yield rng.integers(4, vocab_size, seq_len + 1)

    return write_dataset(
        directory,
        shards=[shard() for _ in range(shards)],
        seq_len=seq_len,
        vocab_size=vocab_size,
        split="bench",
    )


def measure(
    *, data: manifest.Dataset, batch: int, threads: int, shuffle: bool, seconds: float
) -> float:
    """Tokens/s (model input positions: batch x seq_len) over ``seconds`` after one warm-up pass."""
    plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=batch)
    dataset = make_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=shuffle)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.threading.max_intra_op_parallelism = 1
    iterator = iter(dataset.with_options(options))
    for _ in range(plan.batches_per_epoch):  # warm-up: page cache, autotuning
        next(iterator)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(iterator)
        count += 1
    return count * batch * data.seq_len / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.input_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    with tempfile.TemporaryDirectory() as tmp:
        path = options.manifest or synthetic_dataset(
            tmp, records=options.records, seq_len=options.seq_len, shards=options.shards
        )
        data = manifest.load(path)
        cores = os.cpu_count() or 1
        results = {}
        for shuffle in (True, False):
            for threads in sorted({1, cores}):
                rate = measure(
                    data=data,
                    batch=options.batch,
                    threads=threads,
                    shuffle=shuffle,
                    seconds=options.seconds,
                )
                results[f"shuffle={shuffle} threads={threads}"] = {
                    "tokens_per_s": round(rate),
                    "tokens_per_s_per_core": round(rate / threads),
                }
    print(
        json.dumps(
            {
                "seq_len": data.seq_len,
                "batch": options.batch,
                "cores": cores,
                "machine": platform.processor() or platform.machine(),
                "tensorflow": tf.__version__,
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
