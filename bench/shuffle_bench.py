"""The cost of ``--shuffle=global`` at the shard-writing step, side by side with the plain cut.

    python -m bench.shuffle_bench [--manifest=PATH] [--records=N] [--seq_len=L]
                                  [--records_per_part=K] [--shard_bytes=B] [--reps=5]

Both write the same split from the same part files (``pipeline.write.parts``) with the one
shard writer (``pipeline.write.shards.assemble_shard``), in this process, without Beam, on local
disk: A in the input's order (``pipeline.write.order.InputOrder``: whole byte ranges), B
globally shuffled (``ShuffledOrder``: one read per block of neighbouring records, a window of
blocks at a time; ``bench.shuffle_s3_bench`` counts the reads on S3). Parts hold the
records of a real dataset (``--manifest``: its shards' records, cut into parts of
``--records_per_part``, the size of a ``--chunk_bytes`` chunk), or ``--records`` synthetic ones.
Interleaved A, B, A, B; medians; the page cache holds the parts, as it does in a run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from pipeline.write.order import plan_ordered_shards
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.shard_plan import records_per_shard
from pipeline.write.shards import assemble_shard
from schemas.records import RecordSpec, frame_bytes, iter_tfrecord_frames, token_dtype_for_vocab


def real_records(manifest: str):
    """(spec, token rows) of a dataset's records (the tokens feature only)."""
    from pipeline.dataset.reader import iter_record_batches
    from schemas import manifest as manifest_lib

    dataset = manifest_lib.load(manifest)
    spec = RecordSpec(seq_len=dataset.seq_len, token_dtype=dataset.record_spec.token_dtype,
                      with_segments=False)
    rows = [batch["tokens"] for path in dataset.shard_paths()
            for batch in iter_record_batches(dataset, path)]
    return spec, np.concatenate(rows).astype(spec.token_dtype)


def write_parts(directory: str, spec: RecordSpec, rows: np.ndarray, per_part: int):
    return [write_part(PackedChunk(0, n, {"tokens": rows[start:start + per_part]}, PackStats(),
                                   {}), directory=directory, spec=spec, pad_id=0)
            for n, start in enumerate(range(0, len(rows), per_part))]


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shuffle_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", default="", help="take the records of this dataset")
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--seq_len", type=int, default=256)
    parser.add_argument("--records_per_part", type=int, default=4_000)
    parser.add_argument("--shard_bytes", type=int, default=1 << 30)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    if args.manifest:
        spec, rows = real_records(args.manifest)
    else:
        spec = RecordSpec(seq_len=args.seq_len, token_dtype=token_dtype_for_vocab(32000),
                          with_segments=False)
        rows = np.random.default_rng(0).integers(4, 32000, (args.records, args.seq_len + 1),
                                                 dtype=np.uint16)
    size = frame_bytes(spec)
    per_shard = records_per_shard(shard_bytes=args.shard_bytes, frame_bytes=size)
    with tempfile.TemporaryDirectory() as tmp:
        parts = write_parts(tmp, spec, rows, args.records_per_part)
        in_order, plain = plan_ordered_shards(parts, split="a", per_shard=per_shard,
                                              seq_len=spec.seq_len, frame_bytes=size)
        permuted, shuffled = plan_ordered_shards(parts, split="b", per_shard=per_shard,
                                                 seq_len=spec.seq_len, frame_bytes=size, seed=0)

        def write_plain():
            for plan in plain:
                assemble_shard(plan, directory=tmp, frame_bytes=size, order=in_order)

        def write_shuffled():
            for plan in shuffled:
                assemble_shard(plan, directory=tmp, frame_bytes=size, order=permuted)

        times = {"in order": [], "shuffled": []}
        for _ in range(args.reps):
            times["in order"].append(timed(write_plain))
            times["shuffled"].append(timed(write_shuffled))
        with open(f"{tmp}/{shuffled[0].name}", "rb") as handle:
            assert sum(1 for _ in iter_tfrecord_frames(handle)) == shuffled[0].records
    total = len(rows) * size
    print(f"{len(rows):,} records of {size:,} bytes ({total / 1e6:.1f} MB) in {len(parts):,} "
          f"parts, {len(plain)} shard(s), {args.reps} interleaved reps (medians):")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        print(f"  {name:9s} {seconds:7.3f} s  {total / 1e6 / seconds:8.1f} MB/s  "
              f"{len(rows) / seconds:12,.0f} records/s")
    print(f"  shuffled / in order: {medians['shuffled'] / medians['in order']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
