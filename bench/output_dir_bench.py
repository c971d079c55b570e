"""Preparing a crowded ``--output`` from two checkouts side by side: ``output_dir.prepare``.

    python -m bench.output_dir_bench --before=PATH_TO_OTHER_CHECKOUT [--after=.] [--files=20000]

Each rep fills a fresh directory as an interrupted run of split ``train`` leaves it, with
``--files`` files in all: half that run's (shards, dead letters and document hashes its run
record names, and ``.inprogress-`` files), half a user's (``data-NNNNN-of-NNNNN.tfrecord``,
notes), then runs ``prepare`` on it in a fresh process from the ``--before`` checkout, then from
``--after`` (A, B, A, B, ...), with this interpreter. Reported per side: wall seconds (imports
included), CPU seconds and peak RSS of the process tree (``bench.process_tree``), the medians'
ratios after / before, and whether both left the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from bench.process_tree import run_polled

_PREPARE = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from pipeline.launch.output_dir import prepare; "
            "prepare(sys.argv[2], overwrite=False, split='train', run_id='bench')")


def fill(root: str, *, files: int) -> None:
    """An interrupted run's leftovers and a user's files, ``files`` in all."""
    half = files // 2
    names = [f"train-{i:05d}-of-{half:05d}.tfrecord" for i in range(half - 16 - half // 4)]
    names += [f".inprogress-{i:032x}-train-00000-of-00001.tfrecord" for i in range(half // 4)]
    names += [f"doc_hashes/{d:x}.bin" for d in range(16)]
    names += [f"data-{i:05d}-of-{half:05d}.tfrecord" for i in range(half - 1)] + ["notes.txt"]
    os.makedirs(os.path.join(root, "doc_hashes"))
    for name in names:
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(b"x")
    with open(os.path.join(root, ".pilepack-run.json"), "w") as handle:
        json.dump({"run_id": "killed", "splits": ["train"]}, handle)


def _left(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(root) for n in names if n != ".pilepack-run.json")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.output_dir_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the other checkout's root")
    parser.add_argument("--after", default=".", help="this checkout's root (default .)")
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    figures: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": []}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            left = {}
            for side in ("before", "after"):
                root = os.path.join(tmp, f"{side}-{rep}")
                fill(root, files=args.files)
                checkout = os.path.abspath(getattr(args, side))
                status, text, peak_mb, cpu, wall = run_polled(
                    [sys.executable, "-c", _PREPARE, checkout, root])
                if status != 0:
                    sys.exit(f"error: prepare from {checkout} failed (exit {status}):\n"
                             f"{text[-2000:]}")
                figures[side].append((wall, cpu, peak_mb))
                left[side] = _left(root)
            same &= left["before"] == left["after"]
    medians = {side: [statistics.median(col) for col in zip(*rows)]
               for side, rows in figures.items()}
    print(f"{args.files} files; {'':4} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}   "
          f"(medians of {args.reps})")
    for side, (wall, cpu, peak) in medians.items():
        print(f"{side:8} {wall:8.2f} {cpu:8.2f} {peak:8.0f}")
    ratios = [a / b for a, b in zip(medians["after"], medians["before"])]
    print(f"{'after/before':12} wall {ratios[0]:.3f}, CPU {ratios[1]:.3f}, peak {ratios[2]:.3f}")
    print("both left the same files" if same else "THE FILES LEFT DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
