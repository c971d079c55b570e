"""Near-dup on revision chains: does a chain stay one cluster, and what does it cost.

    python -m bench.near_chain_bench [--before=PATH_TO_OTHER_CHECKOUT] [--after=.] \\
        [--chain=20000] [--copies=20000] [--others=5000] [--reps=1]
    python -m bench.near_chain_bench --whole_run --tokenizer_model=PATH --copies=300000 \\
        [--runner=in_process|two_workers|portable]

The input (``datagen.revision_chains``): ``--chain`` revisions of one ~300-word text, each the
previous with 2 words replaced (Jaccard ~0.93 to the next), in revision order, then
``--copies`` copies of one licence and ``--others`` unrelated texts, over 4 Pile files. Each
run is a fresh process that runs only the quality pre-pass with ``--dedup=near`` (exact dedup,
then near) under the in-memory DirectRunner, from the ``--before`` checkout, then from
``--after`` (interleaved per rep), with this interpreter; each checkout's own code comes first
on ``sys.path`` and is the child's working directory (where ``multi_processing`` workers
import from). Reported per side: how many of the chain's revisions are kept (1 when the
chain is one cluster), the near-duplicate clusters' sizes, wall seconds and the peak RSS
summed over the run's whole process tree (``bench.process_tree``).

``--whole_run``: instead, the whole ``pipeline.run --dedup=near`` (pre-pass, tokenize, pack,
shards, manifest) of this checkout on the same input, with ``--tokenizer_model``; reported: its
documents written and filtered by reason (the manifest's accounting), how many of the chain's
revisions and of the licence's copies it wrote, wall seconds, peak MB.

``--runner``: ``in_process`` (the in-memory DirectRunner, the default), ``two_workers``
(``--direct_running_mode=multi_processing --direct_num_workers=2``) or ``portable`` (Beam's job
service and an external SDK worker pool, ``tests.portable``, started afresh for each run with
the run's checkout on their ``PYTHONPATH``; their process trees count in the peak).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile

from bench.process_tree import run_polled
from datagen.revision_chains import revisions, unrelated, write_corpus
from pipeline.quality import doc_hash
from pipeline.quality.decision_files import Decisions
from pipeline.quality.split_doc_hashes import hash_file_path
from tests.portable import portable_services

SEED = 1
RUNNERS = {
    "in_process": ["--runner=DirectRunner"],
    "two_workers": ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
                    "--direct_num_workers=2"],
    "portable": [],  # the services' own flags (``PortableServices.beam_args``)
}

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
with beam.Pipeline(options=PipelineOptions(sys.argv[4:])) as p:
    (p | beam.Create(inputs)
     | FindDrops(plan=QualityPlan(exact_dedup=True, near=NearDupOptions()),
                 config=ReadConfig(), paths=tuple(f.path for f in inputs),
                 directory=sys.argv[3]))
"""


@contextlib.contextmanager
def _runner(name: str, checkout: str, directory: str):
    """(Beam flags, pids whose process trees count too) for ``--runner=name``; for
    ``portable``, a job service and a worker pool running ``checkout``'s code meanwhile."""
    if name != "portable":
        yield RUNNERS[name], ()
        return
    logs = os.path.join(directory, "services")
    os.makedirs(logs)
    with portable_services(logs, env={"PYTHONPATH": os.path.abspath(checkout)}) as services:
        yield services.beam_args, (services.job_pid, services.pool_pid)


def _run(checkout: str, inputs: str, directory: str, chain, *, runner: str) -> dict:
    with _runner(runner, checkout, directory) as (beam_args, also):
        # From the checkout's root: multi_processing workers import from their working
        # directory, so elsewhere they would run this checkout's code for the other's.
        argv = ["env", "-C", os.path.abspath(checkout), sys.executable, "-c", _CHILD,
                os.path.abspath(checkout), inputs, directory, *beam_args]
        status, text, peak_mb, _, wall = run_polled(argv, also=also)
    if status != 0:  # a side may fail (a checkout whose components stop at a round limit)
        last = text.strip().splitlines()[-1] if text.strip() else f"exit {status}"
        return {"failed": last[:300], "wall": wall, "peak": peak_mb}
    with open(os.path.join(directory, "totals.json")) as handle:
        sizes = json.load(handle)["near_dup"]["cluster_sizes"]
    files = {file for file, _ in chain}
    found = {f: Decisions.load(directory, f) for f in files}
    kept = sum(not found[file].reason(line) for file, line in chain)
    return {"kept": kept, "sizes": sizes, "wall": wall, "peak": peak_mb}


def _written(output: str, *, chain: int, others: int) -> dict:
    """How many distinct texts of the chain, the licence and the others the split's
    ``doc_hashes/`` hold (its written documents), the texts made again as ``write_corpus``
    made them."""
    found = set()
    for index in range(doc_hash.PREFIXES):
        with open(os.path.join(output, hash_file_path(index)), "rb") as handle:
            found.update(doc_hash.iter_digests(handle.read()))
    licence, *rest = unrelated(seed=SEED + 1, count=others + 1)
    return {"chain": sum(doc_hash.doc_hash(t) in found
                         for t in set(revisions(seed=SEED, count=chain))),
            "licence": int(doc_hash.doc_hash(licence) in found),
            "others": sum(doc_hash.doc_hash(t) in found for t in rest)}


def _whole_run(inputs: str, output: str, *, tokenizer_model: str, runner: str, chain: int,
               others: int, checkout: str) -> int:
    with _runner(runner, checkout, os.path.dirname(output)) as (beam_args, also):
        argv = [sys.executable, "-m", "pipeline.run", f"--input={inputs}/*", f"--output={output}",
                f"--tokenizer_model={tokenizer_model}", "--seq_len=256", "--dedup=near",
                *beam_args]
        status, text, peak_mb, cpu, wall = run_polled(argv, also=also)
    if status != 0:
        print(f"the run failed (exit {status}):\n{text[-2000:]}")
        return 1
    with open(os.path.join(output, "manifest.json")) as handle:
        accounting = json.load(handle)["accounting"]
    written = _written(output, chain=chain, others=others)
    print(f"whole run ({runner}): read {accounting['read']:,}, written "
          f"{accounting['written']:,}, filtered {accounting['filtered']}; distinct texts "
          f"written: {written['chain']} of the chain's, {written['licence']} licence, "
          f"{written['others']} of {others} others; "
          f"{wall:.1f} s wall, {cpu:.1f} CPU-s, peak {peak_mb:.0f} MB (process tree)")
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
    parser.add_argument("--runner", choices=sorted(RUNNERS), default="in_process",
                        help="where each run's Beam pipeline runs (default in_process)")
    args = parser.parse_args(argv)
    if args.whole_run and not args.tokenizer_model:
        parser.error("--whole_run needs --tokenizer_model")
    sides = ["before", "after"] if args.before else ["after"]
    rows: dict[str, list[dict]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="pilepack-chain-") as tmp:
        truth = write_corpus(
            os.path.join(tmp, "in"),
            seed=SEED,
            chain=args.chain,
            copies=args.copies,
            others=args.others,
        )
        if args.whole_run:
            return _whole_run(os.path.join(tmp, "in"), os.path.join(tmp, "out"),
                              tokenizer_model=args.tokenizer_model, runner=args.runner,
                              chain=args.chain, others=args.others, checkout=args.after)
        for rep in range(args.reps):
            for side in sides:
                directory = os.path.join(tmp, f"{side}-{rep}")
                os.makedirs(directory)
                row = _run(getattr(args, side), os.path.join(tmp, "in"), directory, truth.chain,
                           runner=args.runner)
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
