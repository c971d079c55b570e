"""Trainer input throughput: tokens/s per core that tf.data delivers, in both orders.

    python -m bench.input_bench [--manifest=PATH] [--seq_len=2048] [--records=40000]
        [--segment_ids] [--s3]

Reads, parses and batches shards exactly as training does, in ``--order=files``
(``trainer.input.files.make_dataset``: interleaved reads of each rank's shards, windowed shuffle,
batch, parse) and in ``--order=global`` (``trainer.input.global_order``: ranged reads of a seeded
permutation of all records), shuffled and not, on 1 thread and on all cores, and reports
tokens/s per core (target: >= 20 M) and global/files. The two orders are measured interleaved
(files, global, files, global, ...: ``--rounds`` each) and the median is kept. Without
``--manifest`` it writes a synthetic dataset of ``--records`` records to a temporary local
directory first (``--segment_ids``: with segment ids and positions, which training then
reads too). The first pass (up to ``--seconds``) warms the page cache and the autotuner, so
local figures are for shards in the page cache. ``--s3`` also copies the dataset to a moto S3
server on 127.0.0.1 (``python -m moto.server``, a subprocess sharing the cores) and reads it
through s3fs. ``--order_block`` and ``--order_window`` are the global order's
(``trainer.input.window_order``; 0: the trainer's default for the dataset, which the report names).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import tensorflow as tf

from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.datasets import EOS, write_dataset
from schemas import manifest
from trainer.config import TrainConfig
from trainer.input.files import make_dataset, plan_input
from trainer.input.global_order import make_global_dataset, plan_global
from trainer.input.train_input import resolve_order

ORDERS = ("files", "global")


@dataclasses.dataclass(frozen=True)
class Options:
    manifest: str = flag("", help="an existing dataset's manifest; empty: a synthetic dataset")
    seq_len: int = flag(2048, help="tokens per sequence of the synthetic dataset")
    records: int = flag(40_000, help="records of the synthetic dataset")
    shards: int = flag(8, help="shards of the synthetic dataset")
    segment_ids: bool = flag(False, help="the synthetic dataset has segment ids and positions")
    batch: int = flag(32, help="records per batch")
    seconds: float = flag(10.0, help="timed seconds per measurement, after one warm-up pass")
    rounds: int = flag(3, help="measurements of each order, interleaved; the median is kept")
    s3: bool = flag(False, help="also read the dataset from a moto S3 server")
    order_block: int = flag(0, help="--order_block of the global order (0: the trainer's)")
    order_window: int = flag(0, help="--order_window of the global order (0: the trainer's)")


def synthetic_dataset(
    directory: str,
    *,
    records: int,
    seq_len: int,
    shards: int,
    vocab_size: int = 32768,
    with_segments: bool = False,
) -> str:
    """``records`` random records in ``shards`` shards (datagen.datasets); with segments, a
    document ends (EOS) every 100 tokens or so."""
    rng = np.random.default_rng(0)

    def shard():
        for _ in range(records // shards):
            tokens = rng.integers(4, vocab_size, seq_len + 1)
            if with_segments:
                tokens[rng.random(seq_len + 1) < 0.01] = EOS
            yield tokens

    return write_dataset(
        directory,
        shards=[shard() for _ in range(shards)],
        seq_len=seq_len,
        vocab_size=vocab_size,
        split="bench",
        with_segments=with_segments,
    )


def global_options(*, data: manifest.Dataset, options: Options) -> TrainConfig:
    """The trainer's options of the global order for ``data`` (block and window resolved)."""
    cfg = TrainConfig(steps=1, global_batch_size=options.batch, order_block=options.order_block,
                      order_window=options.order_window)
    return resolve_order(cfg=cfg, train_data=data, saved=None)


def make_input(*, data: manifest.Dataset, order: str, batch: int, shuffle: bool, block: int,
               window: int):
    """One rank's training input in ``order``, as the trainer builds it."""
    segments = data.record_spec.with_segments
    if order == "files":
        plan = plan_input(dataset=data, num_pipelines=1, pipeline_id=0, per_replica_batch=batch)
        return make_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=shuffle,
                            use_segments=segments)
    context = tf.distribute.InputContext(1, 0, 1)
    plan = plan_global(dataset=data, context=context, global_batch_size=batch)
    return make_global_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=shuffle,
                               block=block, window=window, use_segments=segments)


def measure(*, dataset: tf.data.Dataset, tokens_per_batch: int, threads: int, seconds: float,
            warmup_batches: int) -> float:
    """Tokens/s (model input positions) over ``seconds`` after a warm-up pass (at most
    ``warmup_batches`` batches or ``seconds``)."""
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.threading.max_intra_op_parallelism = 1
    iterator = iter(dataset.with_options(options))
    start = time.perf_counter()
    for _ in range(warmup_batches):  # page cache, autotuning
        next(iterator)
        if time.perf_counter() - start > seconds:
            break
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(iterator)
        count += 1
    return count * tokens_per_batch / (time.perf_counter() - start)


def compare(*, data: manifest.Dataset, options: Options, cores: int) -> dict:
    """{"shuffle=S threads=T": per order tokens/s and per core, and global/files}."""
    results = {}
    records = sum(shard["records"] for shard in data.shards)
    cfg = global_options(data=data, options=options)
    for shuffle in (True, False):
        for threads in sorted({1, cores}):
            rates = {order: [] for order in ORDERS}
            for _ in range(options.rounds):
                for order in ORDERS:
                    rates[order].append(measure(
                        dataset=make_input(data=data, order=order, batch=options.batch,
                                           shuffle=shuffle, block=cfg.order_block,
                                           window=cfg.order_window),
                        tokens_per_batch=options.batch * data.seq_len,
                        threads=threads,
                        seconds=options.seconds,
                        warmup_batches=records // options.batch,
                    ))
            row = {}
            for order in ORDERS:
                rate = statistics.median(rates[order])
                row[order] = {"tokens_per_s": round(rate),
                              "tokens_per_s_per_core": round(rate / threads)}
            row["global_over_files"] = round(
                row["global"]["tokens_per_s"] / row["files"]["tokens_per_s"], 2)
            results[f"shuffle={shuffle} threads={threads}"] = row
            print(json.dumps({f"shuffle={shuffle} threads={threads}": row}), file=sys.stderr)
    return results


@contextlib.contextmanager
def moto_s3(directory: str):
    """The dataset in ``directory`` copied to a moto S3 server; yields its manifest URL."""
    from tests.conftest import free_port, s3_environment  # the test suite's endpoint set-up

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    saved = dict(os.environ)
    try:
        for _ in range(300):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
                break
            time.sleep(0.1)
        os.environ.update(s3_environment(endpoint))
        import s3fs

        fs = s3fs.S3FileSystem()
        fs.mkdir("bench")
        fs.put(directory.rstrip("/") + "/", "bench/data/", recursive=True)
        yield "s3://bench/data/manifest.json"
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        server.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.input_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    cores = os.cpu_count() or 1
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = options.manifest or synthetic_dataset(
            tmp, records=options.records, seq_len=options.seq_len, shards=options.shards,
            with_segments=options.segment_ids,
        )
        data = manifest.load(path)
        report["local"] = compare(data=data, options=options, cores=cores)
        if options.s3:
            with moto_s3(data.directory) as url:
                report["s3 (moto)"] = compare(data=manifest.load(url), options=options,
                                              cores=cores)
    print(json.dumps({
        "seq_len": data.seq_len,
        "features": sorted(data.record_spec.feature_dtypes()),
        "records": sum(shard["records"] for shard in data.shards),
        "batch": options.batch,
        "order_block": global_options(data=data, options=options).order_block,
        "order_window": global_options(data=data, options=options).order_window,
        "cores": cores,
        "machine": platform.processor() or platform.machine(),
        "tensorflow": tf.__version__,
        "results": report,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
