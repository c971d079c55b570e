"""What ``--dedup=near`` costs: whole runs with no dedup, ``--dedup=exact`` and
``--dedup=near``, side by side.

    python -m bench.near_dup_bench --input='DIR/0*.jsonl.zst' [--copies=1] [--reps=3]
                                   [--copy_mode=distinct] [--tokenizer_model=PATH]
                                   [--options="--shuffle=global"]

Each run is a fresh ``python -m pipeline.run`` process (in-memory DirectRunner, one encoder
process: ``--encode_processes=1``) over the same input, the three modes interleaved
(plain, exact, near, plain, ...) so that drift of the machine hits them alike. Measured per
run: the CPU seconds and the peak RSS summed over the run's whole process tree
(``bench.process_tree``), and wall seconds. The report gives the medians and near's CPU over
exact's and over plain's (the goal: near adds at most 60%).

``--copies=N`` makes the input N times larger. ``--copy_mode=distinct`` (the default) writes
copies 2..N of every file with each document's words shuffled (seeded by copy, file and line):
as many words and bytes, but no shared text hash and next to no shared shingle, so all three
modes write every copy and near's MinHash, banding and verification see all of them.
``--copy_mode=exact`` copies the files under new names instead: exact duplicates, which
``exact`` and ``near`` drop before banding (and write once) while ``plain`` writes them all,
so near / plain comes out lower than on a corpus N times larger.
Without ``--tokenizer_model`` one is trained once, by a first plain run that is not counted.
"""

from __future__ import annotations

import dataclasses
import glob
import io
import json
import os
import random
import shlex
import shutil
import statistics
import sys
import tempfile

import zstandard

from bench.scaling_bench import run_checked
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.pile_files import write_jsonl_zst

MODES = {"plain": [], "exact": ["--dedup=exact"], "near": ["--dedup=near"]}


@dataclasses.dataclass(frozen=True)
class Options:
    input: str = flag(help="Pile-format input files (a glob)")
    copies: int = flag(1, help="make the input this many times larger (--copy_mode)")
    copy_mode: str = flag("distinct", choices=("distinct", "exact"),
                          help="distinct: copies with each document's words shuffled; "
                               "exact: the same files again (exact duplicates)")
    reps: int = flag(3, help="interleaved repetitions of the three modes")
    tokenizer_model: str = flag("", help="SentencePiece model; empty: train one once")
    options: str = flag("", help="further pipeline.run flags for every run")


def _shuffled_words(path: str, target: str, *, copy: int, file: int) -> None:
    """``path`` (Pile-format zstd) again, each document's words in a seeded order."""
    with open(path, "rb") as handle:
        data = zstandard.ZstdDecompressor().stream_reader(handle).read()
    records = []
    for line, raw in enumerate(io.BytesIO(data), start=1):
        if not raw.strip():
            continue
        record = json.loads(raw)
        words = record["text"].split()
        random.Random(f"{copy}:{file}:{line}").shuffle(words)
        records.append({**record, "text": " ".join(words)})
    write_jsonl_zst(target, records)


def _inputs(pattern: str, workdir: str, copies: int, mode: str) -> str:
    files = sorted(glob.glob(pattern))
    if not files:
        raise ConfigError(f"--input {pattern!r} matches no file")
    if copies == 1:
        return ",".join(files)
    directory = os.path.join(workdir, "in")
    os.makedirs(directory)
    for copy in range(copies):
        for file, path in enumerate(files):
            target = os.path.join(directory, f"{copy:03d}-{os.path.basename(path)}")
            if copy == 0 or mode == "exact":  # a real copy, read from disk like a larger
                shutil.copyfile(path, target)  # corpus would be
            else:
                _shuffled_words(path, target, copy=copy, file=file)
    return directory


def _run(inputs: str, output: str, flags: list[str]) -> tuple[float, float, float]:
    """(CPU seconds, peak MB, wall seconds) of one pipeline run's process tree."""
    shutil.rmtree(output, ignore_errors=True)
    _, peak, cpu, wall = run_checked([sys.executable, "-m", "pipeline.run", "--input", inputs,
                                      "--output", output, "--runner=DirectRunner",
                                      "--encode_processes=1", *flags])
    return cpu, peak, wall


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.near_dup_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    if options.reps < 1 or options.copies < 1:
        raise ConfigError(f"--reps and --copies must be >= 1, got {options.reps}, "
                          f"{options.copies}")
    workdir = tempfile.mkdtemp(prefix="pilepack-near-")
    try:
        inputs = _inputs(options.input, workdir, options.copies, options.copy_mode)
        output = os.path.join(workdir, "out")
        model = options.tokenizer_model
        if not model:
            _run(inputs, output, shlex.split(options.options))
            model = os.path.join(workdir, "tokenizer.model")
            shutil.copy(os.path.join(output, "tokenizer.model"), model)
        flags = [f"--tokenizer_model={model}", *shlex.split(options.options)]
        rows = {mode: [] for mode in MODES}
        for rep in range(options.reps):
            for mode, extra in MODES.items():
                rows[mode].append(_run(inputs, output, [*flags, *extra]))
                cpu, peak, wall = rows[mode][-1]
                print(f"rep {rep} {mode:5s}: {cpu:7.1f} CPU-s, peak {peak:7.0f} MB, "
                      f"{wall:6.1f} s", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    med = {mode: [statistics.median(r[i] for r in runs) for i in range(3)]
           for mode, runs in rows.items()}
    print("\nmedians: " + "; ".join(f"{m} {v[0]:.1f} CPU-s, {v[1]:.0f} MB, {v[2]:.1f} s"
                                    for m, v in med.items()))
    print(f"near / exact CPU: {med['near'][0] / med['exact'][0]:.3f}; "
          f"near / plain CPU: {med['near'][0] / med['plain'][0]:.3f}; near's extra CPU: "
          f"{med['near'][0] - med['plain'][0]:.1f} s over plain, "
          f"{med['near'][0] - med['exact'][0]:.1f} s over exact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
