"""What the claim fence costs a commit: files written with and without ``schemas.claim.Fence``.

    python -m bench.fence_bench [--output=DIR_OR_URL] [--files=200] [--file_bytes=2000000]
        [--reps=5]

A run's workers commit every part, shard and other file through ``common.storage.atomic_open``;
with a claimed run, each commit first reads ``--output``'s claim (``Fence.check``). This bench
claims ``--output`` (a local directory by default; an ``s3://`` or ``gs://`` URL works too),
then, rep by rep, commits ``--files`` files of ``--file_bytes`` bytes (about a part's size at the
default ``--chunk_bytes``) without the fence and with it, in this process (which goes first
alternates rep by rep). Reported: wall and
CPU seconds per commit on each side (medians over the reps), their ratios, and one claim read
on its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from common import storage
from schemas.claim import NO_FENCE, Fence


def _commit_all(output: str, *, files: int, data: bytes, fence: Fence, tag: str):
    """(wall s, CPU s) to commit ``files`` files of ``data`` under ``output``."""
    wall, cpu = time.perf_counter(), time.process_time()
    for index in range(files):
        relative = f".parts/{tag}-{index:05d}.tfrecords"
        with storage.atomic_open(storage.join(output, relative), "wb",
                                 before_commit=fence.for_file(relative)) as handle:
            handle.write(data)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> int:
    from pipeline.launch import claim

    parser = argparse.ArgumentParser(prog="python -m bench.fence_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="", help="where to commit (default: a temp dir)")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--file_bytes", type=int, default=2_000_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        output = args.output or os.path.join(tmp, "out")
        held = claim.claim(output)
        fence = Fence(output=output, run_id=held.run_id)
        data = os.urandom(args.file_bytes)
        sides: dict[str, list[tuple[float, float]]] = {"without": [], "with fence": []}
        try:
            for rep in range(args.reps):
                order = (("without", NO_FENCE), ("with fence", fence))
                for side, used in order[::-1] if rep % 2 else order:  # neither always first
                    sides[side].append(_commit_all(output, files=args.files, data=data,
                                                   fence=used, tag=f"{rep}-{side[0]}"))
            reads = []
            for _ in range(200):
                started = time.perf_counter()
                fence.check()
                reads.append(time.perf_counter() - started)
        finally:
            claim.release(output, held)
            fs, root = storage.filesystem(storage.join(output, ".parts"))
            if fs.exists(root):
                fs.rm(root, recursive=True)
    per = {side: [statistics.median(col) / args.files for col in zip(*rows)]
           for side, rows in sides.items()}
    print(f"{args.files} commits of {args.file_bytes:,} bytes per rep, medians of {args.reps}")
    print(f"{'':12} {'wall ms/commit':>15} {'CPU ms/commit':>15}")
    for side, (wall, cpu) in per.items():
        print(f"{side:12} {wall * 1e3:15.3f} {cpu * 1e3:15.3f}")
    print(f"with/without: wall {per['with fence'][0] / per['without'][0]:.3f}, "
          f"CPU {per['with fence'][1] / per['without'][1]:.3f}")
    print(f"one claim read (Fence.check), median of 200: "
          f"{statistics.median(reads) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
