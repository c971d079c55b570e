"""Two checkouts of pilepack side by side: the same ``pipeline.run`` command, interleaved.

    python -m bench.checkout_bench --before=PATH_TO_OTHER_CHECKOUT [--after=.] [--reps=5] \\
        -- --input="$DEV/0*.jsonl.zst" --tokenizer_model=$TOK/tokenizer.model

For a change that should not move speed or memory (a refactor): each rep runs the command in
a fresh process from the ``--before`` checkout, then from ``--after`` (A, B, A, B, ...), each
into its own output directory, with this interpreter (so both use the same installed
packages; each checkout's own code comes first on ``sys.path``). Reported per side: the run's
wall seconds (the whole command: imports included), the CPU seconds and the peak RSS summed
over its whole process tree (``bench.process_tree``), and the medians' ratios after / before.
The shards and tokenizer of the two sides are compared byte for byte, too.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import sys
import tempfile

from bench.process_tree import run_polled


def _run(checkout: str, args: list[str], output: str) -> tuple[float, float, float]:
    argv = [sys.executable, "-c", "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
            "runpy.run_module('pipeline.run', run_name='__main__')", os.path.abspath(checkout),
            *args, f"--output={output}"]
    status, text, peak_mb, cpu, wall = run_polled(argv)
    if status != 0:
        sys.exit(f"error: the run from {checkout} failed (exit {status}):\n{text[-2000:]}")
    return wall, cpu, peak_mb


def _same_files(a: str, b: str) -> bool:
    names = sorted(n for n in os.listdir(a) if n.endswith((".tfrecord", ".model")))
    return bool(names) and all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n),
                                           shallow=False) for n in names)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkout_bench",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the other checkout's root")
    parser.add_argument("--after", default=".", help="this checkout's root (default .)")
    parser.add_argument("--reps", type=int, default=5)
    args, run_args = parser.parse_known_args(argv)
    run_args = [a for a in run_args if a != "--"]
    figures: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": []}
    identical = True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for side in ("before", "after"):
                out = os.path.join(tmp, f"{side}-{rep}", "split")  # same split name
                figures[side].append(_run(getattr(args, side), run_args, out))
            identical &= _same_files(os.path.join(tmp, f"before-{rep}", "split"),
                                     os.path.join(tmp, f"after-{rep}", "split"))
    medians = {side: [statistics.median(col) for col in zip(*rows)]
               for side, rows in figures.items()}
    print(f"{'':8} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}   (medians of {args.reps})")
    for side, (wall, cpu, peak) in medians.items():
        print(f"{side:8} {wall:8.2f} {cpu:8.2f} {peak:8.0f}")
    ratios = [a / b for a, b in zip(medians["after"], medians["before"])]
    print(f"{'after/before':12} wall {ratios[0]:.3f}, CPU {ratios[1]:.3f}, peak {ratios[2]:.3f}")
    print("per rep, wall after/before: " + ", ".join(
        f"{a[0] / b[0]:.2f}" for a, b in zip(figures["after"], figures["before"])))
    print("shards and tokenizer identical in every rep" if identical else
          "SHARDS OR TOKENIZER DIFFER")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
