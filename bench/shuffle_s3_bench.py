"""``--shuffle=global``'s shard writing from an object store: GETs, time and memory, per-record
reads (the order before blocks) side by side with the block shuffle.

    python -m bench.shuffle_s3_bench [--records=N] [--seq_len=L] [--records_per_part=K]
                                     [--shard_bytes=B] [--block_records=R] [--window_blocks=W]

Parts of synthetic records are written to a moto S3 server on 127.0.0.1 (``python -m
moto.server``, a subprocess sharing the cores); the one shard writer
(``pipeline.write.shards.assemble_shard``) then writes the split twice through s3fs, behind a
proxy that counts the GETs of parts (``tests/robustness/fault_proxy.GetCounter``): A, one read
per record in ``schemas.permutation``'s order (what ``--shuffle=global`` did before blocks), and
B, ``schemas.block_shuffle``'s order, one read per block. Memory: the writer's peak of Python
and numpy allocations (``tracemalloc``), parts and shards being on the server. Each once, A
then B (A takes minutes on a loaded machine). It ends with the whole Pile's requests at both
rates and their price at ``--get_price`` dollars per 1,000 GETs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import tempfile
import time
import tracemalloc

import numpy as np

from pipeline.write.order import Window, plan_ordered_shards
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.shard_plan import records_per_shard
from pipeline.write.shards import assemble_shard
from schemas.block_shuffle import BlockShuffleSpec
from schemas.permutation import Permutation
from schemas.records import RecordSpec, frame_bytes

PILE_RECORDS = 229e9 / 2048  # docs/distributed.md: ~229 B tokens at seq_len 2048
PILE_PARTS = 200_000  # and ~200,000 chunks of 4 MiB


class PerRecordOrder:
    """The order before blocks: position ``p`` holds record ``Permutation(n, seed)
    .forward(p)``, read alone (a window of one-record ranges, grouped by part on reading)."""

    def __init__(self, parts, *, seed: int):
        self.paths = [p.path for p in parts]
        self.starts = np.concatenate([[0], np.cumsum([p.records for p in parts])])
        self.permutation = Permutation(n=int(self.starts[-1]), seed=seed)

    def windows(self, pieces, *, window_records: int):
        pieces = [p for p in pieces if p.count]
        start = int(self.starts[self.paths.index(pieces[0].part)]) + pieces[0].first
        stop = start + sum(p.count for p in pieces)
        for first in range(start, stop, window_records):
            records = self.permutation.forward(np.arange(first, min(stop, first + window_records)))
            part = np.searchsorted(self.starts, records, side="right") - 1
            yield Window([(self.paths[i], int(r - self.starts[i]), 1)
                          for i, r in zip(part.tolist(), records.tolist())])


@contextlib.contextmanager
def moto_bucket(log_dir: pathlib.Path):
    """A moto S3 server with a bucket ``bench``; the environment points s3fs at it."""
    import boto3

    from tests.conftest import clear_s3fs_cache, free_port, http_server, s3_environment

    port = free_port()
    saved = dict(os.environ)
    with http_server(["python", "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                     url=f"http://127.0.0.1:{port}", ready_path="/moto-api/",
                     log_dir=log_dir) as endpoint:
        try:
            os.environ.update(s3_environment(endpoint))
            boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
            clear_s3fs_cache()
            yield endpoint
        finally:
            os.environ.clear()
            os.environ.update(saved)
            clear_s3fs_cache()


def write_split(endpoint: str, *, plans, order, directory: str, size: int) -> dict:
    """Write every shard through a GET-counting proxy: GETs, seconds, peak MB."""
    from tests.conftest import clear_s3fs_cache
    from tests.robustness.fault_proxy import GetCounter

    with GetCounter(endpoint, marker="/.parts/") as proxy:
        os.environ["AWS_ENDPOINT_URL"] = proxy.url
        clear_s3fs_cache()
        tracemalloc.start()
        started = time.perf_counter()
        for plan in plans:
            assemble_shard(plan, directory=directory, frame_bytes=size, order=order)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        gets = len(proxy.gets)
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    clear_s3fs_cache()
    return {"gets": gets, "seconds": seconds, "peak_mb": peak / 1e6}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shuffle_s3_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=3_000)
    parser.add_argument("--seq_len", type=int, default=2048)
    parser.add_argument("--records_per_part", type=int, default=560)  # a Pile chunk's
    parser.add_argument("--shard_bytes", type=int, default=8 << 20)
    parser.add_argument("--block_records", type=int, default=BlockShuffleSpec().block_records)
    parser.add_argument("--window_blocks", type=int, default=BlockShuffleSpec().window_blocks)
    parser.add_argument("--get_price", type=float, default=0.0004)
    args = parser.parse_args(argv)
    spec = RecordSpec(seq_len=args.seq_len, token_dtype="uint16", with_segments=False)
    rows = np.random.default_rng(0).integers(4, 32000, (args.records, args.seq_len + 1),
                                             dtype=np.uint16)
    size = frame_bytes(spec)
    shuffle = BlockShuffleSpec(block_records=args.block_records,
                               window_blocks=args.window_blocks)
    with tempfile.TemporaryDirectory() as tmp, moto_bucket(pathlib.Path(tmp)) as endpoint:
        directory = "s3://bench/split"
        parts = [write_part(PackedChunk(0, n, {"tokens": rows[at:at + args.records_per_part]},
                                        PackStats(), {}), directory=directory, spec=spec, pad_id=0)
                 for n, at in enumerate(range(0, len(rows), args.records_per_part))]
        order, plans = plan_ordered_shards(
            parts, split="t", seq_len=spec.seq_len, frame_bytes=size, seed=0, shuffle=shuffle,
            per_shard=records_per_shard(shard_bytes=args.shard_bytes, frame_bytes=size))
        results = {
            "per record": write_split(endpoint, plans=plans, directory=directory, size=size,
                                      order=PerRecordOrder(parts, seed=0)),
            "blocks": write_split(endpoint, plans=plans, order=order, directory=directory,
                                  size=size),
        }
    print(f"{len(rows):,} records of {size:,} bytes in {len(parts)} parts, {len(plans)} shards "
          f"of {plans[0].records:,}; blocks of {shuffle.block_records}, windows of "
          f"{shuffle.window_blocks} blocks:")
    for name, r in results.items():
        print(f"  {name:10s} {r['gets']:7,} GETs ({len(rows) / r['gets']:6.1f} records/GET) "
              f"{r['seconds']:8.1f} s  peak {r['peak_mb']:6.1f} MB")
    old, new = results["per record"], results["blocks"]
    print(f"  per record / blocks: {old['gets'] / new['gets']:.0f}x GETs, "
          f"{old['seconds'] / new['seconds']:.1f}x time, "
          f"{old['peak_mb'] / new['peak_mb']:.2f}x peak memory")
    blocks_per_part = -(-min(args.records_per_part, len(rows)) // shuffle.block_records)
    pile = {"per record": PILE_RECORDS, "blocks": PILE_PARTS * blocks_per_part}
    for name, gets in pile.items():
        print(f"  the Pile, {name}: ~{gets:,.0f} GETs, ${gets / 1000 * args.get_price:,.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
