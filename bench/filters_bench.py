"""What the quality filters cost: each family's CPU beside the plain run's, on the same input.

    python -m bench.filters_bench --input='corpus/dev/00.jsonl.zst' --tokenizer_model=$TOK \\
        [--times=1] [--output=/tmp/filters-bench]

Two measures, side by side in one run. (1) The plain ``pipeline.run`` (no quality options, the
in-memory DirectRunner) on ``--input`` repeated ``--times`` times: the CPU seconds of its whole
process tree (``resource.getrusage`` of the reaped children) and its peak RSS
(``bench.process_tree``). (2) The filters alone on the same
documents, in this process: CPU seconds of ``pipeline.filters.rules.first_failure`` per family
and for all three together, every rule on (``--filter_profile=all``: the most work; the pile
profile does less), times ``--times``. Reported: each as a ratio to the plain run, and the whole
run with ``--filters=gopher,c4,fineweb`` (its process-tree CPU and peak RSS) against the plain one.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import sys
import tempfile
import time

from bench.process_tree import run_polled
from pipeline.config import ReadConfig
from pipeline.filters.rules import FAMILIES, RULES, first_failure
from pipeline.read.inputs import expand_inputs
from pipeline.read.stage import iter_documents


def _documents(pattern: str) -> list[str]:
    return [doc.text for f in expand_inputs(pattern)
            for doc in iter_documents(f, config=ReadConfig())]


def _filter_cpu(texts: list[str], families: tuple[str, ...]) -> tuple[float, int]:
    active = {r.name: r.threshold for r in RULES.values() if r.family in families}
    start, removed = time.process_time(), 0
    for text in texts:
        removed += first_failure(text, active) is not None
    return time.process_time() - start, removed


def _run(*, inputs: list[str], tokenizer: str, output: str, extra: list[str]) -> dict:
    argv = [sys.executable, "-m", "pipeline.run", f"--input={','.join(inputs)}",
            f"--output={output}", f"--tokenizer_model={tokenizer}", "--overwrite", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    status, text, peak_mb, _, wall = run_polled(argv)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Every process of the tree, reaped by its parent: sampling live ones misses the short.
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{text[-2000:]}")
    with open(os.path.join(output, "manifest.json")) as handle:
        accounting = json.load(handle)["accounting"]
    return {"cpu": cpu, "wall": wall, "peak_mb": peak_mb, "written": accounting["written"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--tokenizer_model", required=True)
    parser.add_argument("--times", type=int, default=1, help="the input repeated this often")
    parser.add_argument("--output", default="")
    args = parser.parse_args(argv)
    files = sorted(glob.glob(args.input)) * args.times
    root = args.output or tempfile.mkdtemp(prefix="filters-bench-")
    plain = _run(inputs=files, tokenizer=args.tokenizer_model,
                 output=os.path.join(root, "plain"), extra=[])
    filtered = _run(inputs=files, tokenizer=args.tokenizer_model,
                    output=os.path.join(root, "filters"), extra=["--filters=gopher,c4,fineweb"])
    texts = _documents(args.input)
    mb = sum(len(t.encode()) for t in texts) * args.times / 1e6
    print(f"input: {len(files)} file(s), {mb:.1f} MB of text; plain run: {plain['cpu']:.1f} "
          f"CPU s, {plain['wall']:.1f} s wall, peak {plain['peak_mb']:.0f} MB")
    print("| filters (every rule on) | CPU s | ratio to the plain run | documents removed |")
    print("|---|---|---|---|")
    families = {name: FAMILIES[name] for name in FAMILIES}
    families["gopher,c4,fineweb"] = tuple(f for fs in FAMILIES.values() for f in fs)
    for name, fams in families.items():
        cpu, removed = _filter_cpu(texts, fams)
        cpu *= args.times
        print(f"| {name} | {cpu:.1f} | +{100 * cpu / plain['cpu']:.1f}% | "
              f"{removed * args.times} of {len(texts) * args.times} |")
    print(f"whole run --filters=gopher,c4,fineweb (pile profile): {filtered['cpu']:.1f} CPU s "
          f"({filtered['cpu'] / plain['cpu']:.2f}x the plain run; it also tokenizes fewer "
          f"documents: {filtered['written']} written against {plain['written']}), peak "
          f"{filtered['peak_mb']:.0f} MB against {plain['peak_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
