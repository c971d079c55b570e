"""Growth with the input, measured: every feature on, at 1x, 4x, 8x and 16x a base corpus, for
distinct, duplicated and chained documents (issue: the Pile at full size).

    python -m bench.growth_bench --corpus="$DEV/0*.jsonl.zst" [--base_mb=3] [--sizes=1,4,8,16]
        [--kinds=distinct,duplicated,chained] [--tokenizer_model=PATH] [--eval=PATH] [--reps=1]
    python -m bench.growth_bench --report=SAVED_OUTPUT   # the report again, from its json line

The inputs (``bench.growth_inputs``): the base is the corpus's first ``--base_mb`` MB of text;
at ``k``x, *distinct* is the base and k - 1 altered copies of it (every third word replaced:
no exact or near duplicate), *duplicated* k exact copies, *chained* ``datagen.revision_chains``
with k times the base counts. Each run is a fresh ``pipeline.run`` (through
``bench.counted_run``) on the in-memory DirectRunner with ``--dedup=near
--decontaminate=EVAL --subset_weights=pile-v1 --shuffle=global
--formats=tfrecord,megatron,arrayrecord`` (``--options`` adds flags), one tokenizer for every
run (given, or trained once on the base: 8,192 pieces), ``--eval`` the evaluation set (else the
40 corpus documents after the base). Runs go size by size, kinds interleaved.

Reported per run: seconds per MB of input text (the whole command's wall time and the process
tree's CPU), peak RSS summed over the process tree (``bench.process_tree``), each against the
kind's 1x (the goal: at most +25% from 1x to 8x), the pre-pass jobs' and the main job's
seconds, the bytes their ``GroupByKey``s took in (``bench.counted_run``), documents written and
dropped, and the object-store requests the run's files imply (``requests``). Then, per kind,
the least-squares line of CPU seconds, shuffled MB and peak MB against the input's MB: its
slope is the marginal cost per MB (the rate to scale to a larger corpus), its intercept the
fixed cost of a run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench.corpus import corpus_spec
from bench.growth_inputs import KINDS, ChainBase, base_documents, read_records, write_input
from bench.process_tree import run_polled
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.pile_files import write_jsonl_zst
from pipeline.read.inputs import expand_inputs

ALL_FEATURES = (
    "--dedup=near",
    "--subset_weights=pile-v1",
    "--shuffle=global",
    "--formats=tfrecord,megatron,arrayrecord",
)
EVAL_DOCUMENTS = 40
BLOCK_RECORDS = 256  # --shuffle_block_records' default: one ranged GET per block of a part
GOAL = 0.25  # growth allowed from 1x to 8x


@dataclasses.dataclass(frozen=True)
class Options:
    corpus: str = flag(
        "", help="Pile-format files (comma list or glob); empty: the built-in sample"
    )
    base_mb: float = flag(3.0, help="MB of text at 1x: the corpus's first documents")
    sizes: str = flag("1,4,8,16", help="comma list of multiples of the base")
    kinds: str = flag(",".join(KINDS), help="comma list of input kinds: " + ", ".join(KINDS))
    tokenizer_model: str = flag(
        "", help="SentencePiece model; empty: train 8,192 pieces on the base first"
    )
    eval: str = flag(
        "", help="--decontaminate's evaluation files; empty: the 40 corpus documents after the base"
    )
    decontaminate: bool = flag(True, help="pass --decontaminate (with --eval's files)")
    options: str = flag("", help="more pipeline.run flags, space-separated")
    reps: int = flag(1, help="runs of each kind and size (medians reported)")
    chain: int = flag(ChainBase.chain, help="chained input at 1x: revisions of one text")
    chain_copies: int = flag(ChainBase.copies, help="chained input at 1x: licence copies")
    chain_others: int = flag(ChainBase.others, help="chained input at 1x: unrelated texts")
    report: str = flag(
        "",
        help="print the report of an earlier run from its output (the "
        "'json: ' line) instead of running",
    )


@dataclasses.dataclass(frozen=True)
class Run:
    """One run's figures (seconds and MB as measured; per-MB rates of the input's text)."""

    kind: str
    k: int
    text_mb: float
    wall: float
    cpu: float
    peak_mb: float
    prepass_s: float
    main_s: float
    shuffled_mb: float
    prepass_shuffled_mb: float
    largest_shuffles: str  # the three largest GroupByKeys' input, MB
    written: int
    dropped: int
    requests: int

    @property
    def wall_per_mb(self) -> float:
        return self.wall / self.text_mb

    @property
    def cpu_per_mb(self) -> float:
        return self.cpu / self.text_mb


def requests(output: str, doc: dict, *, text_bytes: int) -> int:
    """Object-store requests the run's files imply, an estimate: a PUT per file it committed
    and per part (one a chunk: each input file's text in ``packing.chunk_bytes`` pieces, taken
    as at least one a file), and the shard writer's ranged GETs of the parts, one per
    ``BLOCK_RECORDS`` records of a part with ``--shuffle=global`` (at least one a part;
    docs/distributed.md). Listings, the input's reads and the pre-pass's scratch files are
    left out."""
    files = sum(len(names) for _, _, names in os.walk(output))
    parts = max(len(doc["inputs"]), -(-text_bytes // doc["packing"]["chunk_bytes"]))
    gets = parts + doc["totals"]["records"] // BLOCK_RECORDS
    return files + parts + gets


def measure(
    *, kind: str, k: int, written_input, model: str, eval_path: str, extra: list[str], workdir: str
) -> Run:
    """One ``pipeline.run`` with every feature on (``--decontaminate`` if ``eval_path``),
    through ``bench.counted_run``."""
    output, metrics = os.path.join(workdir, "out"), os.path.join(workdir, "metrics.json")
    shutil.rmtree(output, ignore_errors=True)
    argv = [
        sys.executable,
        "-m",
        "bench.counted_run",
        metrics,
        f"--input={written_input.directory}/*.jsonl.zst",
        f"--output={output}",
        f"--tokenizer_model={model}",
        *([f"--decontaminate={eval_path}"] if eval_path else []),
        *ALL_FEATURES,
        *extra,
    ]
    status, text, peak_mb, cpu, wall = run_polled(argv)
    if status:
        raise SystemExit(f"{kind} {k}x failed (exit {status}):\n{text[-3000:]}")
    with open(metrics) as handle:
        jobs = json.load(handle)["jobs"]
    with open(os.path.join(output, "manifest.json")) as handle:
        doc = json.load(handle)
    accounting = doc["accounting"]
    return Run(
        kind=kind,
        k=k,
        text_mb=written_input.text_bytes / 1e6,
        wall=wall,
        cpu=cpu,
        peak_mb=peak_mb,
        prepass_s=sum(j["seconds"] for j in jobs[:-1]),
        main_s=jobs[-1]["seconds"],
        shuffled_mb=sum(j.get("shuffled_bytes", 0) for j in jobs) / 1e6,
        prepass_shuffled_mb=sum(j.get("shuffled_bytes", 0) for j in jobs[:-1]) / 1e6,
        largest_shuffles=_largest(jobs),
        written=accounting["written"],
        dropped=sum(accounting["filtered"].values()),
        requests=requests(output, doc, text_bytes=written_input.text_bytes),
    )


def _largest(jobs: list[dict], count: int = 3) -> str:
    by_gbk = [(v, name) for j in jobs for name, v in j.get("by_group_by_key", {}).items()]
    return ", ".join(f"{name} {v / 1e6:,.1f}" for v, name in sorted(by_gbk)[::-1][:count])


def growth(runs: list[Run]) -> dict[tuple[str, int], tuple[float, float, float]]:
    """Per (kind, k): wall s/MB, CPU-s/MB and peak memory as ratios to the kind's smallest k
    (medians over reps)."""
    med = statistics.median
    by: dict[tuple[str, int], list[Run]] = {}
    for run in runs:
        by.setdefault((run.kind, run.k), []).append(run)
    figures = {
        key: (
            med(r.wall_per_mb for r in rs),
            med(r.cpu_per_mb for r in rs),
            med(r.peak_mb for r in rs),
        )
        for key, rs in by.items()
    }
    base = {
        kind: figures[min((key for key in figures if key[0] == kind), key=lambda x: x[1])]
        for kind, _ in figures
    }
    return {
        key: tuple(v / b for v, b in zip(values, base[key[0]])) for key, values in figures.items()
    }


def table(runs: list[Run]) -> str:
    """The runs as a Markdown table (medians over reps), growth against each kind's 1x."""
    med = statistics.median
    ratios = growth(runs)
    header = (
        "| input | text MB | wall s/MB | CPU-s/MB | peak MB | growth: wall s/MB, CPU-s/MB, "
        "peak | pre-pass s | main s | shuffled MB | written / dropped | requests |"
    )
    lines = [header, "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    keys = sorted({(r.kind, r.k) for r in runs}, key=lambda x: (KINDS.index(x[0]), x[1]))
    for kind, k in keys:
        rs = [r for r in runs if (r.kind, r.k) == (kind, k)]
        g = ratios[(kind, k)]
        lines.append(
            f"| {kind} {k}x | {med(r.text_mb for r in rs):.1f} | "
            f"{med(r.wall_per_mb for r in rs):.2f} | {med(r.cpu_per_mb for r in rs):.2f} | "
            f"{med(r.peak_mb for r in rs):,.0f} | ×{g[0]:.2f}, ×{g[1]:.2f}, ×{g[2]:.2f} | "
            f"{med(r.prepass_s for r in rs):.1f} | {med(r.main_s for r in rs):.1f} | "
            f"{med(r.shuffled_mb for r in rs):,.1f} | {rs[0].written:,} / {rs[0].dropped:,} | "
            f"{rs[0].requests:,} |"
        )
    return "\n".join(lines)


def _sizes(options: Options) -> list[int]:
    sizes = sorted({int(s) for s in options.sizes.split(",") if s})
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"--sizes must be positive integers, got {options.sizes!r}")
    return sizes


def _kinds(options: Options) -> list[str]:
    kinds = [k for k in options.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        raise ConfigError(
            f"--kinds: unknown {unknown or options.kinds!r}, expected a comma "
            f"list of {', '.join(KINDS)}"
        )
    return kinds


def _train(path: str, workdir: str) -> str:
    output = os.path.join(workdir, "tokenizer")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.train_tokenizer",
            f"--input={path}",
            f"--output_dir={output}",
            "--vocab_size=8192",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return os.path.join(output, "tokenizer.model")


def measure_all(options: Options) -> list[Run]:
    """Write each input and run it, size by size, kinds interleaved; the runs."""
    sizes, kinds = _sizes(options), _kinds(options)
    chain = ChainBase(chain=options.chain, copies=options.chain_copies, others=options.chain_others)
    records = read_records([f.path for f in expand_inputs(corpus_spec(options.corpus))])
    base = base_documents(records, text_bytes=int(options.base_mb * 1e6))
    workdir = tempfile.mkdtemp(prefix="pilepack-growth-")
    runs: list[Run] = []
    try:
        eval_path = options.eval
        if not eval_path:
            eval_path = os.path.join(workdir, "eval.jsonl.zst")
            held_out = records[len(base) : len(base) + EVAL_DOCUMENTS]
            if not held_out:
                raise ConfigError(
                    "--corpus has no documents after the base to hold out as "
                    "the evaluation set: lower --base_mb or pass --eval"
                )
            write_jsonl_zst(eval_path, held_out)
        model = options.tokenizer_model
        if not model:
            base_path = os.path.join(workdir, "base.jsonl.zst")
            write_jsonl_zst(base_path, base)
            model = _train(base_path, workdir)
        print(
            f"base: {len(base):,} documents; sizes {sizes}; kinds {kinds}; model {model}; "
            f"{os.cpu_count()} cores",
            flush=True,
        )
        for k in sizes:
            inputs = {
                kind: write_input(
                    os.path.join(workdir, f"{kind}-{k}"), kind=kind, k=k, base=base, chain=chain
                )
                for kind in kinds
            }
            for rep in range(options.reps):
                for kind in kinds:
                    run = measure(
                        kind=kind,
                        k=k,
                        written_input=inputs[kind],
                        model=model,
                        eval_path=eval_path if options.decontaminate else "",
                        extra=options.options.split(),
                        workdir=workdir,
                    )
                    runs.append(run)
                    print(
                        f"{kind} {k}x rep {rep}: {run.text_mb:.1f} MB of text, {run.wall:.1f} s "
                        f"wall, {run.cpu:.1f} CPU-s, peak {run.peak_mb:,.0f} MB, pre-pass "
                        f"{run.prepass_s:.1f} s, main {run.main_s:.1f} s, shuffled "
                        f"{run.shuffled_mb:,.1f} MB (pre-pass {run.prepass_shuffled_mb:,.1f}; "
                        f"largest: {run.largest_shuffles}), {run.written:,} written, "
                        f"{run.dropped:,} dropped, ~{run.requests:,} requests",
                        flush=True,
                    )
            for kind in kinds:
                shutil.rmtree(inputs[kind].directory)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return runs


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """The least-squares line through ``points`` (x, y): (slope, intercept). With runs' text
    MB as x, the slope is the marginal cost per MB and the intercept the fixed cost."""
    n = len(points)
    mean_x, mean_y = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if not spread:
        return 0.0, mean_y
    rate = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return rate, mean_y - rate * mean_x


def report(runs: list[Run]) -> None:
    """Print the table, the growth over ``GOAL`` up to 8x, each kind's marginal rates and
    the runs as JSON (``--report`` reads that line back)."""
    print("\n" + table(runs))
    over = [
        f"{kind} {k}x ({', '.join(f'×{g:.2f}' for g in ratios)})"
        for (kind, k), ratios in growth(runs).items()
        if k <= 8 and any(g > 1 + GOAL for g in ratios)
    ]
    print(
        f"\ngrowth over {GOAL:.0%} up to 8x (wall s/MB, CPU-s/MB, peak): "
        + ("; ".join(over) if over else "none")
    )
    print("\nleast-squares lines over the sizes, per MB of input text (marginal; fixed):")
    for kind in sorted({r.kind for r in runs}, key=KINDS.index):
        rs = [r for r in runs if r.kind == kind]
        lines = {
            name: slope([(r.text_mb, getattr(r, name)) for r in rs])
            for name in ("cpu", "shuffled_mb", "peak_mb")
        }
        cpu, shuffled, peak = lines["cpu"], lines["shuffled_mb"], lines["peak_mb"]
        per_second = f"{1 / cpu[0]:.2f}" if cpu[0] > 0 else "n/a: no rise over the sizes"
        print(
            f"  {kind}: {cpu[0]:.3f} CPU-s ({per_second} MB per CPU-second; fixed "
            f"{cpu[1]:.1f} CPU-s), shuffled {shuffled[0]:.2f} MB (fixed {shuffled[1]:.1f}), "
            f"peak {peak[0]:.1f} MB (fixed {peak[1]:.0f} MB)"
        )
    print("json: " + json.dumps([dataclasses.asdict(r) for r in runs]))


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.growth_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(sys.argv[1:] if argv is None else argv))
    if options.report:
        with open(options.report) as handle:
            line = next(line for line in handle if line.startswith("json: "))
        report([Run(**r) for r in json.loads(line[len("json: ") :])])
        return 0
    _sizes(options)  # bad sizes and kinds are refused before any work
    _kinds(options)
    if options.reps < 1 or options.base_mb <= 0:
        raise ConfigError(
            f"--reps must be >= 1 and --base_mb > 0, got {options.reps}, {options.base_mb}"
        )
    report(measure_all(options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
