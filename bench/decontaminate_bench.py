"""What ``--decontaminate`` costs in memory as the evaluation set grows: whole runs with a
small evaluation set and a large generated one, this code and (optionally) another checkout's,
side by side.

    python -m bench.decontaminate_bench --input='DIR/00.jsonl.zst' --eval=DIR/val.jsonl.zst
                                        [--large_mb=150] [--baseline=CHECKOUT]
                                        [--tokenizer_model=PATH] [--mode=drop]

The large evaluation set is ``--large_mb`` MB of distinct prose: the sentences of the input
and of ``--eval`` shuffled (seeded) into passages of 40 sentences, as many as it takes; the
small one is ``--eval`` itself. Each run is a fresh ``python -m pipeline.run`` (in-memory
DirectRunner, ``--encode_processes=1``) with ``--decontaminate`` and ``--decontaminate_mode``;
measured: the peak RSS summed over its whole process tree (``bench.process_tree``), that peak
split at the pre-pass's end (its log line ``quality pre-pass:``) into the pre-pass's and the
main pipeline's, what the main pipeline starts from (what the pre-pass left in the process),
and wall seconds. ``--baseline``: a
checkout of the code to compare against, run from its own directory (so it imports its own
``pipeline``). The report gives each code's large / small peaks.
"""

from __future__ import annotations

import dataclasses
import glob
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile

import zstandard

from bench.process_tree import run_phases
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.pile_files import write_jsonl_zst

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_PASSAGE_SENTENCES = 40
_PREPASS_END = "quality pre-pass:"  # pipeline.quality.prepare's log line as the pre-pass ends


@dataclasses.dataclass(frozen=True)
class Options:
    input: str = flag(help="Pile-format training files (a glob)")
    eval: str = flag(help="the small evaluation set (a JSON Lines file)")
    large_mb: int = flag(150, help="MB of text in the generated large evaluation set")
    baseline: str = flag("", help="a checkout of the code to compare against; empty: none")
    tokenizer_model: str = flag("", help="SentencePiece model; empty: train one once")
    mode: str = flag("drop", choices=("drop", "redact"), help="--decontaminate_mode")


def _sentences(paths: list[str]) -> list[str]:
    found = []
    for path in paths:
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        for raw in io.BytesIO(data):
            if raw.strip():
                found += [s for s in _SENTENCE.split(json.loads(raw)["text"]) if len(s) > 20]
    return found


def large_eval(paths: list[str], target: str, *, megabytes: int) -> int:
    """Write ``megabytes`` MB of passages of shuffled ``paths`` sentences to ``target``; each
    round reshuffles, so passages (and their 13-grams across sentence joins) are distinct.
    Returns the passages written."""
    sentences, rng, records, size, goal = _sentences(paths), random.Random(0), [], 0, megabytes
    while size < goal * 1_000_000:
        rng.shuffle(sentences)
        for at in range(0, len(sentences), _PASSAGE_SENTENCES):
            text = " ".join(sentences[at:at + _PASSAGE_SENTENCES])
            records.append({"text": text})
            size += len(text)
            if size >= goal * 1_000_000:
                break
    write_jsonl_zst(target, records)
    return len(records)


def _run(code: str, inputs: str, output: str, flags: list[str]) -> tuple[float, ...]:
    """(peak MB, the pre-pass's peak MB, the main pipeline's peak MB and starting MB, wall
    seconds) of one pipeline run's process tree, run from ``code``."""
    shutil.rmtree(output, ignore_errors=True)
    here = os.getcwd()
    os.chdir(code)  # cwd first on sys.path: the run imports that checkout's pipeline
    argv = [sys.executable, "-m", "pipeline.run", "--input", inputs, "--output", output,
            "--runner=DirectRunner", "--encode_processes=1", *flags]
    try:
        status, text, (prepass, main), (_, start), _, wall = run_phases(
            argv, markers=(_PREPASS_END,))
    finally:
        os.chdir(here)
    if status:
        raise SystemExit(f"{' '.join(argv)} failed ({status}):\n{text[-3000:]}")
    return max(prepass, main), prepass, main, start, wall


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.decontaminate_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    files = sorted(glob.glob(options.input))
    if not files or not os.path.exists(options.eval):
        raise ConfigError(f"--input {options.input!r} or --eval {options.eval!r} matches no "
                          "file")
    codes = {"this": os.getcwd()}
    if options.baseline:
        codes = {"baseline": os.path.abspath(options.baseline), **codes}
    workdir = tempfile.mkdtemp(prefix="pilepack-decon-")
    try:
        big = os.path.join(workdir, "large.jsonl.zst")
        passages = large_eval(files + [options.eval], big, megabytes=options.large_mb)
        print(f"large evaluation set: {passages} passages, "
              f"{os.path.getsize(big) / 1e6:.0f} MB compressed", flush=True)
        inputs, output = ",".join(files), os.path.join(workdir, "out")
        model = options.tokenizer_model
        if not model:
            _run(codes["this"], inputs, output, [])
            model = os.path.join(workdir, "tokenizer.model")
            shutil.copy(os.path.join(output, "tokenizer.model"), model)
        rows = {}
        for size, source in (("small", os.path.abspath(options.eval)), ("large", big)):
            for code, directory in codes.items():
                rows[code, size] = _run(directory, inputs, output, [
                    f"--tokenizer_model={model}", f"--decontaminate={source}",
                    f"--decontaminate_mode={options.mode}"])
                peak, prepass, main, start, wall = rows[code, size]
                print(f"{code:8s} {size}: peak {peak:7.0f} MB (pre-pass {prepass:5.0f} MB, "
                      f"main pipeline {main:5.0f} MB from {start:5.0f} MB), {wall:6.1f} s",
                      flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for code in codes:
        for at, what in ((0, "peak"), (2, "main pipeline peak")):
            large, small = rows[code, "large"][at], rows[code, "small"][at]
            print(f"{code}: large / small {what} {large / small:.2f} (+{large - small:.0f} MB)")
        grown = {size: rows[code, size][2] - rows[code, size][3] for size in ("small", "large")}
        print(f"{code}: the main pipeline's own growth, small {grown['small']:.0f} MB, large "
              f"{grown['large']:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
