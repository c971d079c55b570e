"""A rerun after a kill against an uninterrupted run, side by side in one run.

    python -m bench.resume_bench --input='corpus/*.jsonl.zst' [--kill_at=0.65] [run flags...]

Runs ``python -m pipeline.run`` three times on the same input and flags (each in its own
process session): uninterrupted; killed with SIGKILL (the launcher and every worker) at
``--kill_at`` of the uninterrupted run's wall time; the same command rerun on the killed run's
``--output``. Prints each wall time, the rerun's as a fraction of the uninterrupted run's, what
the rerun reused (its ``resume:`` log lines), and whether every file of the two datasets
(the manifest aside) is byte-identical.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


def _command(args: list[str], output: pathlib.Path) -> list[str]:
    return [sys.executable, "-m", "pipeline.run", *args, f"--output={output}"]


def _timed(argv: list[str], *, kill_after: float | None = None) -> tuple[float, str, int]:
    """Run ``argv`` in its own session; SIGKILL all of it after ``kill_after`` seconds."""
    with tempfile.TemporaryFile() as log:
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            rc = process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            rc = process.wait()
        seconds = time.monotonic() - started
        log.seek(0)
        return seconds, log.read().decode(errors="replace"), rc


def _files(out: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kill_at", type=float, default=0.65,
                        help="kill the second run at this fraction of the first's wall time")
    ours, run_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="resume-bench-") as tmp:
        whole, killed = pathlib.Path(tmp, "whole", "train"), pathlib.Path(tmp, "killed", "train")
        full, log, rc = _timed(_command(run_args, whole))
        if rc != 0:
            print(log[-3000:])
            return rc
        cut, _, rc = _timed(_command(run_args, killed), kill_after=ours.kill_at * full)
        if rc == 0:
            print(f"the run ended before {ours.kill_at:.0%} of its time: nothing to resume")
            return 1
        rerun, log, rc = _timed(_command(run_args, killed))
        if rc != 0:
            print(log[-3000:])
            return rc
        resumed = [line for line in log.splitlines() if "resume:" in line]
        same = _files(whole) == _files(killed)
        print(f"command: python -m pipeline.run {' '.join(run_args)}")
        print(f"uninterrupted {full:.1f} s; killed at {cut:.1f} s ({ours.kill_at:.0%}); "
              f"rerun {rerun:.1f} s = {rerun / full:.2f} of uninterrupted; "
              f"killed + rerun {(cut + rerun) / full:.2f}")
        print("rerun reused: " + ("; ".join(resumed) if resumed else "nothing"))
        print(f"files byte-identical to the uninterrupted run's: {same}")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
