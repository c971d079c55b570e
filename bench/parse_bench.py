"""Benchmark: the main thread's per-document work, parsing and hashing, side by side.

    python -m bench.parse_bench [--corpus=GLOB] [--reps=5]

Every line of the corpus is read into memory first (untimed, ``pipeline.read.stage.read_lines``);
then, interleaved ``--reps`` times, each variant runs over all of them on one thread:

  parse (orjson)   ``pipeline.read.parse.parse_line``: what Parse runs
  parse (json)     ``parse_line_exact``: the standard library alone (the code before orjson)
  doc hash         ``pipeline.quality.doc_hash.doc_hash`` of every document's text

Reported: MB of line bytes per second (wall and CPU), medians; and that both parsers return
equal results on every line (the run stops if not). Default corpus: the built-in sample.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

from bench.corpus import corpus_spec
from common.flags import ArgumentParser, add_flags, flag, from_args


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    corpus: str = flag("", help="comma list of Pile-format files, globs or directories; "
                       "empty: the built-in sample")
    reps: int = flag(5, help="interleaved repetitions of every variant")


def _lines(corpus: str) -> list[bytes]:
    from pipeline.config import ReadConfig
    from pipeline.read.inputs import expand_inputs
    from pipeline.read.stage import RawChunk, read_lines

    config = ReadConfig()
    return [line for file in expand_inputs(corpus) for item in read_lines(file, config=config)
            if isinstance(item, RawChunk) for line in item.lines()]


def _timed(function, items) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for item in items:
        function(item)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    add_flags(parser, BenchConfig)
    config = from_args(BenchConfig, parser.parse_args(argv))
    from pipeline.quality.doc_hash import doc_hash
    from pipeline.read.parse import Document, parse_line, parse_line_exact

    lines = _lines(corpus_spec(config.corpus))
    fast = [parse_line(line, line=1) for line in lines]
    if fast != [parse_line_exact(line, line=1) for line in lines]:
        sys.exit("error: parse_line and parse_line_exact differ on this corpus")
    texts = [doc.text for doc in fast if isinstance(doc, Document)]
    megabytes = sum(map(len, lines)) / 1e6
    variants = {
        "parse (orjson)": (lambda line: parse_line(line, line=1), lines),
        "parse (json)": (lambda line: parse_line_exact(line, line=1), lines),
        "doc hash": (doc_hash, texts),
    }
    times = {name: [] for name in variants}
    for _ in range(config.reps):
        for name, (function, items) in variants.items():
            times[name].append(_timed(function, items))
    print(f"{len(lines):,} lines, {megabytes:.1f} MB; {config.reps} interleaved reps, medians; "
          "both parsers equal on every line")
    print("| variant | seconds | MB/s wall | MB per CPU-second |\n|---|---:|---:|---:|")
    for name, runs in times.items():
        wall = statistics.median(run[0] for run in runs)
        cpu = statistics.median(run[1] for run in runs)
        print(f"| {name} | {wall:.3f} | {megabytes / wall:.1f} | {megabytes / cpu:.1f} |")


if __name__ == "__main__":
    main()
