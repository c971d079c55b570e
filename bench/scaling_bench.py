"""Scale-out on ONE input file, and bounded memory on the default path (issue: scale-out).

    python -m bench.scaling_bench --corpus=FILE[,FILE...] [--tokenizer_model=PATH] [--reps=3]
                                  [--copies=1] [--encoder=auto] [--write_rates=PATH]

Scaling: one input file (several ``--corpus`` files, or ``--copies`` of them, are concatenated
into one first: zstd frames, gzip members and JSON Lines all concatenate; a bigger file makes
the runs' fixed start-up cost a smaller part of them), ``--encode_processes=1 --encoder_threads=1``
(one encoder thread in each worker: a worker is one core, whatever the encoder backend),
``--runner=DirectRunner --direct_running_mode=multi_processing --direct_num_workers=N`` for
N = 1 and N = 2, interleaved (1, 2, 1, 2, ...), each run a fresh ``python -m pipeline.run``.
Throughput is the run's own figure (text MB over the seconds ``pipeline.run`` reports: from
listing the input to the committed manifest, imports excluded); the report gives the median
of the per-rep ratios 2 workers / 1 worker.

Memory: the default path (in-memory DirectRunner, default options: fan-out off, the compiled
encoder in a thread per core) on the file and on four copies of it (four input files): the peak
of the RSS summed over the whole process tree (the run and every process it started), polled
every 20 ms with psutil (bench.process_tree). Every scaling run's tree peak is reported too.

Rates: ``--write_rates=PATH`` (the dry run's file is ``pipeline/launch/dry_run/rates.json``)
sets, in that file, the entry of the backend the scaling runs used (from their manifest) to
the two-worker median text MB per CPU-second, with this command, the corpus and the date as
its ``source`` (``pipeline.launch.dry_run.rates``); the other backends' entries are kept.

Default corpus: the built-in sample's train files; BENCHMARKS.md's figures come from a 50 MB
Pile-format corpus: ``--corpus="$DEV/00.jsonl.zst,$DEV/01.jsonl.zst,$DEV/02.jsonl.zst"``.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench.corpus import corpus_spec
from bench.process_tree import run_polled
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args

MULTI = ["--runner=DirectRunner", "--direct_running_mode=multi_processing"]
_SUMMARY = re.compile(r"\] ([\d.]+) s: ([\d.]+) MB/s of text(?:.*?tokenized by (\d+) worker)?")


@dataclasses.dataclass(frozen=True)
class Options:
    corpus: str = flag("", help="Pile-format input: a file or a comma list of files of one format "
                                "(concatenated into one input file); empty: the built-in sample")
    tokenizer_model: str = flag(
        "", help="SentencePiece model; empty: train a 32,000-piece one on the corpus first")
    reps: int = flag(3, help="interleaved repetitions of 1 worker and 2 workers")
    copies: int = flag(1, help="concatenate the corpus this many times into the one input file")
    encoder: str = flag("auto", choices=("auto", "sentencepiece", "gigatoken"),
                        help="pipeline.run --encoder of the scaling runs")
    memory: bool = flag(True, help="also measure the default path's peak memory at 1x and 4x")
    write_rates: str = flag(
        "", help="set the used backend's text MB per CPU-second (two workers, median) in this "
                 "rates file for --dry_run, e.g. pipeline/launch/dry_run/rates.json")


@dataclasses.dataclass(frozen=True)
class Measured:
    seconds: float  # as pipeline.run reports it
    text_mb_per_s: float
    workers: int  # processes that tokenized (pipeline.run's Beam metric)
    peak_tree_mb: float
    cores_busy: float  # CPU seconds of the whole tree over its wall seconds (imports included)
    mb_per_cpu_second: float  # text MB over the whole tree's CPU seconds (imports included)


def run_checked(argv: list[str]) -> tuple[str, float, float, float]:
    """``bench.process_tree.run_polled``, failing on a non-zero exit status."""
    status, output, peak_mb, cpu, wall = run_polled(argv)
    if status:
        raise SystemExit(f"{' '.join(argv)} failed ({status}):\n{output[-3000:]}")
    return output, peak_mb, cpu, wall


def pipeline(input_path: str, model: str, output: str, extra: list[str]) -> Measured:
    shutil.rmtree(output, ignore_errors=True)
    output_text, peak, cpu, wall = run_checked([
        sys.executable, "-m", "pipeline.run", "--input", input_path, "--output", output,
        "--tokenizer_model", model, *extra])
    match = _SUMMARY.search(output_text)
    if not match:
        raise SystemExit(f"no summary line in the run's output:\n{output_text[-3000:]}")
    seconds, mb_per_s = float(match[1]), float(match[2])
    return Measured(seconds=seconds, text_mb_per_s=mb_per_s, workers=int(match[3] or 0),
                    peak_tree_mb=peak, cores_busy=cpu / wall,
                    mb_per_cpu_second=mb_per_s * seconds / cpu)


def one_input_file(corpus: str, workdir: str, *, copies: int = 1) -> str:
    """The corpus as one file: itself, or its files' bytes (``copies`` times) concatenated
    (one format only)."""
    paths = [p for p in corpus.split(",") if p] * copies
    if len(paths) == 1:
        return paths[0]
    suffixes = {p.rsplit("/", 1)[-1].split(".", 1)[-1] for p in paths}
    if len(suffixes) != 1:
        raise ConfigError(f"--corpus files must share one format to be concatenated into one "
                          f"input file, got suffixes {sorted(suffixes)}")
    target = os.path.join(workdir, "one." + suffixes.pop())
    with open(target, "wb") as out:
        for path in paths:
            with open(path, "rb") as handle:
                shutil.copyfileobj(handle, out)
    return target


def train_model(input_path: str, workdir: str) -> str:
    output = os.path.join(workdir, "tokenizer")
    subprocess.run([sys.executable, "-m", "pipeline.train_tokenizer", "--input", input_path,
                    "--output_dir", output, "--vocab_size=32000"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(output, "tokenizer.model")


def scaling(input_path: str, model: str, workdir: str, reps: int, encoder: str) -> float:
    """Run and print the scaling table; return the two-worker median text MB per CPU-second."""
    rows = []
    for rep in range(reps):
        row = {}
        for workers in (1, 2):
            row[workers] = pipeline(input_path, model, os.path.join(workdir, "out"), [
                *MULTI, f"--direct_num_workers={workers}", "--encode_processes=1",
                "--encoder_threads=1", f"--encoder={encoder}"])
            if row[workers].workers != workers:
                raise SystemExit(f"expected {workers} worker(s) to tokenize, the run reports "
                                 f"{row[workers].workers}")
        rows.append(row)
        print(f"rep {rep}: " + ", ".join(
            f"{n} worker(s) {m.text_mb_per_s:.2f} MB/s ({m.seconds:.1f} s, {m.cores_busy:.2f} "
            f"cores busy, tree peak {m.peak_tree_mb:.0f} MB)" for n, m in row.items())
            + f", ratio {row[2].text_mb_per_s / row[1].text_mb_per_s:.3f}", flush=True)
    med = statistics.median
    ratios = [r[2].text_mb_per_s / r[1].text_mb_per_s for r in rows]
    print(f"\n| multi_processing DirectRunner, one file, --encode_processes=1 --encoder_threads=1 "
          f"--encoder={encoder} | text MB/s | cores busy | text MB per CPU-second | "
          "peak RSS of the process tree |")
    print("|---|---:|---:|---:|---:|")
    for workers in (1, 2):
        print(f"| {workers} worker(s) | {med(r[workers].text_mb_per_s for r in rows):.2f} | "
              f"{med(r[workers].cores_busy for r in rows):.2f} | "
              f"{med(r[workers].mb_per_cpu_second for r in rows):.2f} | "
              f"{med(r[workers].peak_tree_mb for r in rows):,.0f} MB |")
    print(f"median ratio 2 workers / 1 worker: {med(ratios):.3f} "
          f"(per rep: {', '.join(f'{r:.3f}' for r in ratios)}); per core at 2 workers: "
          f"{med(r[2].text_mb_per_s for r in rows) / 2:.2f} MB/s of text")
    return med(r[2].mb_per_cpu_second for r in rows)


def write_rates(path: str, *, rate: float, output: str, argv: list[str], options: Options,
                input_path: str) -> None:
    """Set the backend of the run at ``output`` (the one that encoded the most documents) to
    ``rate`` in the dry run's rates file at ``path``, with where it came from."""
    from pipeline.launch.dry_run.rates import write_rate
    from schemas import manifest

    doc = manifest.load(output).doc
    backend = max(doc["encoder"]["backends"], key=lambda b: b["documents"])["name"]
    corpus = options.corpus or "the built-in sample's train files"
    write_rate(path, backend=backend, text_mb_per_cpu_second=rate, source={
        "command": shlex.join(["python", "-m", "bench.scaling_bench", *argv]),
        "corpus": (f"{corpus}, concatenated {options.copies} time(s) into one file: "
                   f"{os.path.getsize(input_path):,} bytes, "
                   f"{doc['totals']['text_bytes'] / 1e6:.1f} MB of text"),
        "date": datetime.date.today().isoformat(),
        "measured": (f"two multi_processing DirectRunner workers, --encode_processes=1 "
                     f"--encoder_threads=1, median of {options.reps} interleaved reps, "
                     f"{os.cpu_count()} cores"),
    })
    print(f"wrote {backend}: {rate:.2f} text MB per CPU-second to {path}")


def memory(input_path: str, model: str, workdir: str) -> None:
    copies = os.path.join(workdir, "copies")
    os.makedirs(copies, exist_ok=True)
    suffix = os.path.basename(input_path).split(".", 1)[-1]
    for i in range(4):
        shutil.copy(input_path, os.path.join(copies, f"{i:02d}.{suffix}"))
    one = pipeline(input_path, model, os.path.join(workdir, "mem1"), ["--runner=DirectRunner"])
    four = pipeline(copies, model, os.path.join(workdir, "mem4"), ["--runner=DirectRunner"])
    print(f"\ndefault path (in-memory DirectRunner, default options), peak RSS of the process "
          f"tree: 1x {one.peak_tree_mb:,.0f} MB ({one.text_mb_per_s:.2f} MB/s), 4x "
          f"{four.peak_tree_mb:,.0f} MB ({four.text_mb_per_s:.2f} MB/s): "
          f"{(four.peak_tree_mb / one.peak_tree_mb - 1) * 100:+.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.scaling_bench", description=__doc__)
    add_flags(parser, Options)
    argv = sys.argv[1:] if argv is None else argv
    options = from_args(Options, parser.parse_args(argv))
    if options.reps < 1 or options.copies < 1:
        raise ConfigError(f"--reps and --copies must be >= 1, got {options.reps}, "
                          f"{options.copies}")
    workdir = tempfile.mkdtemp(prefix="pilepack-scaling-")
    try:
        input_path = one_input_file(corpus_spec(options.corpus), workdir, copies=options.copies)
        model = options.tokenizer_model or train_model(input_path, workdir)
        print(f"input: one file, {os.path.getsize(input_path):,} bytes; model: {model}; "
              f"{os.cpu_count()} cores", flush=True)
        rate = scaling(input_path, model, workdir, options.reps, options.encoder)
        if options.write_rates:
            write_rates(options.write_rates, rate=rate, output=os.path.join(workdir, "out"),
                        argv=argv, options=options, input_path=input_path)
        if options.memory:
            memory(input_path, model, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
