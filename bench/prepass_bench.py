"""The quality pre-pass's own time on ONE input file, 1 worker vs 2 (issue: pre-pass fan-out).

    python -m bench.prepass_bench --corpus=FILE[,FILE...] [--copies=2] [--reps=3]
                                  [--options="--dedup=exact"] [--tokenizer_model=PATH]

The input is one file, built as ``bench.scaling_bench`` builds it (the ``--corpus`` files,
``--copies`` times, concatenated). Each run is a fresh process that runs only the pre-pass, as
the launcher does (``pipeline.quality.prepare.run_prepass`` with the ``pipeline.run`` flags in
``--options``), under ``--runner=DirectRunner --direct_running_mode=multi_processing
--direct_num_workers=N`` for N = 1 and N = 2, interleaved (1, 2, 1, 2, ...). The figure is the
pre-pass's seconds, as the manifest's ``quality.prepass_seconds`` counts them (the pipeline
alone: imports and the main pipeline excluded), and the CPU seconds of the run's whole process
tree (launcher and Beam's workers, start-up included: what the run cost, whatever else the
machine runs meanwhile); the report gives the median of the per-rep speed-ups (1-worker
seconds / 2-worker seconds). With the fan-out (on by default in multi_processing mode) the
second worker hashes and counts chunks of the one file; without it (``--options=...
--fanout=off``) the file is one work item, so one worker does it all.

``--subset_tokens`` in ``--options`` needs ``--tokenizer_model`` (the pre-pass counts tokens);
add ``--encoder_threads=1`` there to keep each worker to one core.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time

from bench.corpus import corpus_spec
from bench.scaling_bench import MULTI, one_input_file, run_checked
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args

_SECONDS = re.compile(r"^prepass_seconds=([\d.]+)$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Options:
    corpus: str = flag("", help="Pile-format input: a file or a comma list of files of one format "
                                "(concatenated into one input file); empty: the built-in sample")
    copies: int = flag(2, help="concatenate the corpus this many times into the one input file")
    reps: int = flag(3, help="interleaved repetitions of 1 worker and 2 workers")
    options: str = flag("--dedup=exact", help="pipeline.run flags that make the pre-pass run "
                                              "(--dedup=exact, --exclude_docs_from, "
                                              "--subset_tokens) and any others")
    tokenizer_model: str = flag("", help="SentencePiece model, for --subset_tokens")


def once() -> None:
    """A child run: the pre-pass alone with ``sys.argv[1:]`` (``pipeline.run`` flags); prints
    its seconds."""
    from pipeline.launch.beam_options import fanout_enabled
    from pipeline.quality import prepare
    from pipeline.quality.plan import plan_quality
    from pipeline.read.inputs import expand_inputs
    from pipeline.run import parse

    config, beam_args = parse(sys.argv[1:])
    inputs = expand_inputs(config.input)
    plan = plan_quality(config, inputs=inputs)
    started = time.time()
    prepare.run_prepass(config, plan=plan, inputs=inputs,
                        model_path=config.tokenizer_model, beam_args=beam_args,
                        fanout=fanout_enabled(config.fanout, beam_args))
    print(f"prepass_seconds={time.time() - started:.3f}", flush=True)


def prepass_seconds(input_path: str, output: str, options: list[str],
                    workers: int) -> tuple[float, float]:
    """The pre-pass's seconds, and the CPU seconds of its run's process tree."""
    shutil.rmtree(output, ignore_errors=True)
    text, _, cpu, _ = run_checked([
        sys.executable, "-c", "from bench.prepass_bench import once; once()",
        "--input", input_path, "--output", output, *options, *MULTI,
        f"--direct_num_workers={workers}"])
    match = _SECONDS.search(text)
    if not match:
        raise SystemExit(f"no prepass_seconds line in the run's output:\n{text[-3000:]}")
    return float(match[1]), cpu


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.prepass_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    if options.reps < 1 or options.copies < 1:
        raise ConfigError(f"--reps and --copies must be >= 1, got {options.reps}, "
                          f"{options.copies}")
    extra = shlex.split(options.options)
    if options.tokenizer_model:
        extra.append(f"--tokenizer_model={options.tokenizer_model}")
    workdir = tempfile.mkdtemp(prefix="pilepack-prepass-")
    try:
        input_path = one_input_file(corpus_spec(options.corpus), workdir, copies=options.copies)
        print(f"input: one file, {os.path.getsize(input_path):,} bytes; options: "
              f"{' '.join(extra)}; {os.cpu_count()} cores", flush=True)
        rows = []
        for rep in range(options.reps):
            row = {n: prepass_seconds(input_path, os.path.join(workdir, "out"), extra, n)
                   for n in (1, 2)}
            rows.append(row)
            print(f"rep {rep}: 1 worker {row[1][0]:.2f} s ({row[1][1]:.1f} CPU-s), "
                  f"2 workers {row[2][0]:.2f} s ({row[2][1]:.1f} CPU-s), speed-up "
                  f"{row[1][0] / row[2][0]:.3f}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    med = statistics.median
    speedups = [r[1][0] / r[2][0] for r in rows]
    print(f"\npre-pass seconds, median: 1 worker {med(r[1][0] for r in rows):.2f} "
          f"({med(r[1][1] for r in rows):.1f} CPU-s), 2 workers {med(r[2][0] for r in rows):.2f} "
          f"({med(r[2][1] for r in rows):.1f} CPU-s); median speed-up {med(speedups):.3f} "
          f"(per rep: {', '.join(f'{s:.3f}' for s in speedups)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
