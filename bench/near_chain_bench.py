"""Near-dup on revision chains: does a chain stay one cluster, and what does it cost.

    python -m bench.near_chain_bench [--before=PATH_TO_OTHER_CHECKOUT] [--after=.] \\
        [--chain=20000] [--copies=20000] [--others=5000] [--reps=1]
    python -m bench.near_chain_bench --whole_run --tokenizer_model=PATH --copies=300000

The input (``datagen.revision_chains``): ``--chain`` revisions of one ~300-word text, each the
previous with 2 words replaced (Jaccard ~0.93 to the next), in revision order, then
``--copies`` copies of one licence and ``--others`` unrelated texts, over 4 Pile files. Each
run is a fresh process that runs only the quality pre-pass with ``--dedup=near`` (exact dedup,
then near) under the in-memory DirectRunner, from the ``--before`` checkout, then from
``--after`` (interleaved per rep), with this interpreter; each checkout's own code comes first
on ``sys.path``. Reported per side: how many of the chain's revisions are kept (1 when the
chain is one cluster), the near-duplicate clusters' sizes, wall seconds and the peak RSS
summed over the run's whole process tree (``bench.process_tree``).

``--whole_run``: instead, the whole ``pipeline.run --dedup=near`` (pre-pass, tokenize, pack,
shards, manifest) of this checkout on the same input, with ``--tokenizer_model``; reported: its
documents written and filtered by reason (the manifest's accounting), wall seconds, peak MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from bench.process_tree import run_polled
from datagen.revision_chains import write_corpus
from pipeline.quality.decision_files import Decisions

# The child: the pre-pass alone, from the checkout put first on sys.path.
_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from pipeline.config import ReadConfig
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.plan import QualityPlan
from pipeline.quality.prepass import FindDrops
from pipeline.read.inputs import expand_inputs
inputs = expand_inputs(sys.argv[2])
with beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"])) as p:
    (p | beam.Create(inputs)
     | FindDrops(plan=QualityPlan(exact_dedup=True, near=NearDupOptions()),
                 config=ReadConfig(), paths=tuple(f.path for f in inputs),
                 directory=sys.argv[3]))
"""


def _run(checkout: str, inputs: str, directory: str, chain) -> dict:
    argv = [sys.executable, "-c", _CHILD, os.path.abspath(checkout), inputs, directory]
    status, text, peak_mb, _, wall = run_polled(argv)
    if status != 0:  # a side may fail (a checkout whose components stop at a round limit)
        last = text.strip().splitlines()[-1] if text.strip() else f"exit {status}"
        return {"failed": last[:300], "wall": wall, "peak": peak_mb}
    with open(os.path.join(directory, "totals.json")) as handle:
        sizes = json.load(handle)["near_dup"]["cluster_sizes"]
    files = {file for file, _ in chain}
    found = {f: Decisions.load(directory, f) for f in files}
    kept = sum(not found[file].reason(line) for file, line in chain)
    return {"kept": kept, "sizes": sizes, "wall": wall, "peak": peak_mb}


def _whole_run(inputs: str, output: str, tokenizer_model: str) -> int:
    argv = [sys.executable, "-m", "pipeline.run", f"--input={inputs}/*", f"--output={output}",
            f"--tokenizer_model={tokenizer_model}", "--seq_len=256", "--dedup=near"]
    status, text, peak_mb, cpu, wall = run_polled(argv)
    if status != 0:
        print(f"the run failed (exit {status}):\n{text[-2000:]}")
        return 1
    with open(os.path.join(output, "manifest.json")) as handle:
        accounting = json.load(handle)["accounting"]
    print(f"whole run: read {accounting['read']:,}, written {accounting['written']:,}, "
          f"filtered {accounting['filtered']}; {wall:.1f} s wall, {cpu:.1f} CPU-s, "
          f"peak {peak_mb:.0f} MB (process tree)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.near_chain_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--before", default="", help="the other checkout's root (optional)")
    parser.add_argument("--after", default=".", help="this checkout's root (default .)")
    parser.add_argument("--chain", type=int, default=20000)
    parser.add_argument("--copies", type=int, default=20000)
    parser.add_argument("--others", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--whole_run", action="store_true",
                        help="the whole pipeline.run --dedup=near of --after instead")
    parser.add_argument("--tokenizer_model", default="", help="with --whole_run (required)")
    args = parser.parse_args(argv)
    if args.whole_run and not args.tokenizer_model:
        parser.error("--whole_run needs --tokenizer_model")
    sides = ["before", "after"] if args.before else ["after"]
    rows: dict[str, list[dict]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="pilepack-chain-") as tmp:
        truth = write_corpus(
            os.path.join(tmp, "in"),
            seed=1,
            chain=args.chain,
            copies=args.copies,
            others=args.others,
        )
        if args.whole_run:
            return _whole_run(os.path.join(tmp, "in"), os.path.join(tmp, "out"),
                              args.tokenizer_model)
        for rep in range(args.reps):
            for side in sides:
                directory = os.path.join(tmp, f"{side}-{rep}")
                os.makedirs(directory)
                row = _run(getattr(args, side), os.path.join(tmp, "in"), directory, truth.chain)
                rows[side].append(row)
                if "failed" in row:
                    print(
                        f"rep {rep} {side:6s}: FAILED after {row['wall']:6.1f} s, peak "
                        f"{row['peak']:6.0f} MB: {row['failed']}",
                        flush=True,
                    )
                    continue
                largest = sorted((int(k) for k in row["sizes"]), reverse=True)[:3]
                print(
                    f"rep {rep} {side:6s}: chain kept {row['kept']} of {args.chain}, "
                    f"clusters {sum(row['sizes'].values())} (largest sizes {largest}), "
                    f"{row['wall']:6.1f} s, peak {row['peak']:6.0f} MB",
                    flush=True,
                )
    medians = {
        side: {key: statistics.median(r[key] for r in runs) for key in ("wall", "peak")}
        for side, runs in rows.items()
    }
    print(
        "\nmedians: "
        + "; ".join(f"{side} {m['wall']:.1f} s, {m['peak']:.0f} MB" for side, m in medians.items())
    )
    if args.before:
        print(
            f"after / before: wall {medians['after']['wall'] / medians['before']['wall']:.3f}, "
            f"peak memory {medians['after']['peak'] / medians['before']['peak']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
