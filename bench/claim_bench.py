"""The output claim's cost, from two checkouts side by side: a run's claim cycle (claim, bind a
job, job over, release: one create, three replaces, one delete) repeated in one directory.

    python -m bench.claim_bench --before=PATH_TO_OTHER_CHECKOUT [--after=.] [--cycles=200] \\
        [--reps=3] [--dir=DIR]

Each rep runs the cycles in a fresh process from ``--before``, then from ``--after`` (each
checkout's code first on ``sys.path``, this interpreter's packages), in a new directory under
``--dir`` (default: a temporary directory; pass a mount, e.g. a FUSE bucket mount, to measure
there; a checkout that cannot claim there reports its error). Reported: the median
milliseconds per cycle of each side, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import uuid

# Run in the child: the cycles, timed; prints milliseconds per cycle.
_CYCLES = """
import sys, time
from pipeline.launch import claim
from schemas.claim import Job
out, cycles = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
for n in range(cycles):
    held = claim.claim(f"{out}/{n % 10}", runner="DirectRunner")
    held = claim.mark_submitting(f"{out}/{n % 10}", held)
    held = claim.record_job(f"{out}/{n % 10}", held, Job(kind="portable", id=f"job-{n}"))
    held = claim.record_job_over(f"{out}/{n % 10}", held)
    claim.release(f"{out}/{n % 10}", held)
print((time.perf_counter() - start) * 1000 / cycles)
"""


def _cycle_ms(checkout: str, directory: str, cycles: int) -> float | str:
    out = os.path.join(directory, f"claim-bench-{uuid.uuid4().hex[:8]}")
    program = f"import sys; sys.path.insert(0, sys.argv.pop(1)); exec({_CYCLES!r})"
    done = subprocess.run(
        [sys.executable, "-c", program, os.path.abspath(checkout), out, str(cycles)],
        capture_output=True, text=True, cwd=os.path.abspath(checkout), check=False)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["failed"])[-1][:300]
    return float(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claim_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the other checkout's root")
    parser.add_argument("--after", default=".", help="this checkout's root (default .)")
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default="", help="where to claim (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir or None) as directory:
        sides = {"before": [], "after": []}
        for _ in range(args.reps):
            for side, results in sides.items():
                results.append(_cycle_ms(getattr(args, side), directory, args.cycles))
    medians = {}
    for side, results in sides.items():
        failed = [r for r in results if isinstance(r, str)]
        medians[side] = None if failed else statistics.median(results)
        shown = f"{medians[side]:.2f} ms" if not failed else f"failed: {failed[0]}"
        reps = ", ".join(f"{r:.1f}" if isinstance(r, float) else "failed" for r in results)
        print(f"{side:<7} {shown}   (per rep: {reps})")
    if None not in medians.values():
        print(f"after/before {medians['after'] / medians['before']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
