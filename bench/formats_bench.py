"""What an extra output format costs a run: the same command with and without it, interleaved.

    python -m bench.formats_bench --corpus=GLOB --tokenizer_model=PATH [--formats=tfrecord,megatron]
                                  [--reps=3] [-- extra pipeline flags]

Each run is ``python -m pipeline.run --runner=DirectRunner`` in a fresh subprocess (wall time
of the whole command, imports included, as a user sees it), alternating the default
(``--formats=tfrecord``) and ``--formats`` given, ``--reps`` times each, into fresh output
directories. Prints every run's seconds, each side's median and the median's ratio; the TFRecord
shards of both sides are checked to be the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _run(args: list[str], output: pathlib.Path) -> float:
    shutil.rmtree(output, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline.run", "--runner=DirectRunner",
                    f"--output={output}", *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def _shards(output: pathlib.Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(output.glob("*.tfrecord"))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.formats_bench")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer_model", required=True)
    parser.add_argument("--formats", default="tfrecord,megatron")
    parser.add_argument("--reps", type=int, default=3)
    args, extra = parser.parse_known_args(argv)
    common = [f"--input={args.corpus}", f"--tokenizer_model={args.tokenizer_model}", *extra]
    sides = {"tfrecord": ["--formats=tfrecord"], args.formats: [f"--formats={args.formats}"]}
    times: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="formats-bench-") as tmp:
        shards = {}
        for rep in range(args.reps):
            for name, flags in sides.items():
                output = pathlib.Path(tmp) / f"{rep}-{len(times[name])}-{name.replace(',', '_')}"
                seconds = _run([*common, *flags], output / "split")
                times[name].append(seconds)
                shards[name] = _shards(output / "split")
                print(f"rep {rep} {name:<24} {seconds:7.2f} s", flush=True)
                shutil.rmtree(output)
        if len(set(map(str, shards.values()))) != 1:
            print("the TFRecord shards differ between the two sides", file=sys.stderr)
            return 1
    base, extra_side = (statistics.median(times[name]) for name in sides)
    print(f"median: tfrecord {base:.2f} s, {args.formats} {extra_side:.2f} s: "
          f"{(extra_side / base - 1) * 100:+.1f}% (shards identical)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
