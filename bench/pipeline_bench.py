"""Pipeline throughput against the bare SentencePiece encoder, side by side (issue: speed).

    python -m bench.pipeline_bench [--corpus=GLOB] [--tokenizer_model=PATH] [--reps=3]
                                   [--variants=default,sentencepiece,...] [--rss_scaling]
                                   [--copies=1]

A: the raw encoder alone, at its best: every document's text already in memory, encoded by
   ``SentencePieceProcessor.encode(texts, num_threads=cores)`` (no I/O, no Beam) three ways --
   whole documents; documents cut at safe word boundaries into <= 64 KiB pieces (same ids,
   1.3-1.6x faster: BPE slows down on long inputs); and those pieces in batches of ~4 MiB, each
   batch's ids dropped once counted (flat memory on a large corpus) -- and the fastest is the
   baseline.
B: the full pipeline (DirectRunner, same model via --tokenizer_model, same cores): read,
   decompress, parse, tokenize, pack, serialize, write shards, manifest; once per variant
   (``VARIANTS``: the default options, and one flag changed in each of the others).

Each measurement runs in a fresh subprocess, interleaved A, B1, B2, ..., A, B1, B2, ...
(imports are not timed on either side; CPU seconds, of every thread and encoder process, are
taken over the same span). Memory is the peak of the RSS summed over the
child's whole process tree (the run and every process it starts: encoder processes
included), polled every 20 ms with psutil. The report gives text MB/s and tokens/s of each,
each variant's median ratio B/A, and its peak tree memory. ``--rss_scaling`` also runs the
default pipeline on one file and on four copies of it and reports both peaks. ``--copies=N``
measures both sides on N copies of every corpus file (the same documents N times: neither side
keeps a word cache from one call to the next, so a copy costs what new text does), to show the
ratio once the pipeline's fixed cost per run is spread over more input.

Default corpus: the built-in sample; the figures in BENCHMARKS.md come from a 50 MB
Pile-format corpus: ``--corpus="$DEV/0*.jsonl.zst"``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench.corpus import corpus_spec, corpus_texts
from bench.process_tree import run_polled
from common.flags import ArgumentParser, add_flags, flag, from_args

_MODULE = "bench.pipeline_bench"  # run again as a child process, one per measurement

# Pipeline variants: name -> extra pipeline.run flags.
VARIANTS = {
    "default": [],
    "sentencepiece": ["--encoder=sentencepiece"],  # the word-cache backend in its process pool
    "gigatoken-processes": ["--encoder=gigatoken", "--encode_processes=2"],
    "gigatoken-1-thread": ["--encoder=gigatoken", "--encode_processes=1", "--encoder_threads=1"],
    "guard-specials-only": ["--encoder_check_every=0"],
    "guard-every-8": ["--encoder_check_every=8"],
}


@dataclasses.dataclass(frozen=True)
class Options:
    corpus: str = flag(
        "", help="Pile-format input: comma list of files, globs or directories; "
        "empty: the built-in sample (datagen.sample.cache)"
    )
    tokenizer_model: str = flag(
        "", help="SentencePiece model for both sides; empty: train one (32k BPE) on the corpus"
    )
    reps: int = flag(3, help="interleaved encoder/pipeline repetitions")
    threads: int = flag(os.cpu_count() or 1, help="encoder threads and pipeline --encoder_threads")
    variants: tuple[str, ...] = flag(
        ("default",), help=f"comma list of pipeline variants run each rep: {', '.join(VARIANTS)}")
    rss_scaling: bool = flag(False, help="also compare peak memory on one file and four copies")
    copies: int = flag(1, help="measure both sides on this many copies of every corpus file")


def child_encoder(corpus: str, model: str, threads: int) -> dict:
    import sentencepiece as spm

    from tokenizer.boundaries import cut_text

    texts = corpus_texts(corpus)
    sp = spm.SentencePieceProcessor(model_file=model)
    started, cpu = time.perf_counter(), _cpu()
    ids = sp.encode(texts, num_threads=threads)
    whole, whole_cpu = time.perf_counter() - started, _cpu() - cpu
    started, cpu = time.perf_counter(), _cpu()
    pieces = [piece for text in texts for piece in cut_text(text, max_bytes=65536)]
    cut_ids = sp.encode(pieces, num_threads=threads)
    cut, cut_cpu = time.perf_counter() - started, _cpu() - cpu
    assert sum(map(len, cut_ids)) == sum(map(len, ids)), "cutting changed the encoding"
    del cut_ids
    # Cut, and encoded a batch at a time, each batch's ids dropped once counted: memory stays
    # flat however large the corpus (the two forms above hold every id as a Python int).
    started, cpu = time.perf_counter(), _cpu()
    batched_tokens = sum(len(piece_ids) for batch in _batches(pieces, BATCH_CHARS)
                         for piece_ids in sp.encode(batch, num_threads=threads))
    batched, batched_cpu = time.perf_counter() - started, _cpu() - cpu
    assert batched_tokens == sum(map(len, ids)), "batching changed the encoding"
    best = min((whole, whole_cpu), (cut, cut_cpu), (batched, batched_cpu))
    return {"seconds": best[0], "whole_seconds": whole, "cut_seconds": cut,
            "batched_seconds": batched, "cpu_seconds": best[1],
            "text_bytes": sum(len(t.encode()) for t in texts),
            "tokens": sum(map(len, ids)) + len(ids)}  # + one EOS per document, as written


BATCH_CHARS = 4 << 20  # the baseline's batches: about the pipeline's --chunk_bytes


def _batches(pieces: list[str], chars: int):
    """``pieces`` in consecutive runs of about ``chars`` characters."""
    batch, size = [], 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def child_pipeline(corpus: str, model: str, threads: int, output: str,
                   extra: list[str] = ()) -> dict:
    import apache_beam  # noqa: F401  imports are not the work measured (as for the encoder)

    from pipeline import run  # noqa: F401
    from pipeline.tokenize import prepare as prepare_tokenizer  # noqa: F401
    from tokenizer import backends, guard  # noqa: F401

    started, cpu = time.perf_counter(), _cpu()
    code = run.main(["--input", corpus, "--output", output, "--tokenizer_model", model,
                     "--seq_len=2048", f"--encoder_threads={threads}", "--overwrite",
                     "--runner=DirectRunner", *extra])
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    if code:
        raise SystemExit(f"pipeline failed with exit status {code}")
    with open(os.path.join(output, "manifest.json"), encoding="utf-8") as f:
        doc = json.load(f)
    return {"seconds": seconds, "cpu_seconds": cpu, "text_bytes": doc["totals"]["text_bytes"],
            "tokens": doc["totals"]["tokens"], "encoder": doc["encoder"]}


_CHILDREN = {"encoder": child_encoder, "pipeline": child_pipeline}


def _spawn(kind: str, **kwargs) -> dict:
    """Run one measurement in a child process; add the peak RSS of its whole process tree."""
    command = [sys.executable, "-m", _MODULE, "--child", kind, "--child_args", json.dumps(kwargs)]
    status, output, peak_mb, _, _ = run_polled(command, stderr=subprocess.DEVNULL)
    if status:
        raise SystemExit(f"{kind} child failed with exit status {status}")
    result = json.loads(output.strip().splitlines()[-1])
    result["peak_tree_mb"] = peak_mb
    return result


def _copied(corpus: str, *, copies: int, directory: str) -> str:
    """A directory holding ``copies`` copies of every file of ``corpus``."""
    from pipeline.read.inputs import expand_inputs

    os.makedirs(directory)
    for file in expand_inputs(corpus):
        for copy in range(copies):
            name = f"{copy:02d}-{os.path.basename(file.path)}"
            shutil.copy(file.path, os.path.join(directory, name))
    return directory


def _cpu() -> float:
    """CPU seconds of this process (all threads) and of the processes it has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + usage.ru_utime + usage.ru_stime


def _ensure_model(corpus: str, workdir: str) -> str:
    from pipeline import run
    from tokenizer.spec import MODEL_FILENAME

    output = os.path.join(workdir, "tokenizer-run")
    code = run.main(["--input", corpus, "--output", output, "--vocab_size=32000",
                     "--seq_len=2048", "--runner=DirectRunner"])
    if code:
        raise SystemExit("could not train the benchmark tokenizer")
    return os.path.join(output, MODEL_FILENAME)


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog=f"python -m {_MODULE}", description=__doc__)
    add_flags(parser, Options)
    # How the benchmark runs each measurement in a child process; not for users.
    parser.add_argument("--child", choices=sorted(_CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--child_args", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        result = _CHILDREN[args.child](**json.loads(args.child_args))
        result["peak_rss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return 0
    options = from_args(Options, args)
    unknown = [name for name in options.variants if name not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown --variants {unknown}; choose from {', '.join(VARIANTS)}")
    corpus = corpus_spec(options.corpus)
    if options.copies < 1:
        raise SystemExit(f"--copies={options.copies} must be at least 1")
    workdir = tempfile.mkdtemp(prefix="pilepack-bench-")
    try:
        if options.copies > 1:
            corpus = _copied(corpus, copies=options.copies, directory=os.path.join(workdir, "in"))
        model = options.tokenizer_model or _ensure_model(corpus, workdir)
        rows = []
        for rep in range(options.reps):
            a = _spawn("encoder", corpus=corpus, model=model, threads=options.threads)
            bs = {name: _spawn("pipeline", corpus=corpus, model=model, threads=options.threads,
                               output=os.path.join(workdir, "out"), extra=VARIANTS[name])
                  for name in options.variants}
            rows.append((a, bs))
            print(f"rep {rep}: encoder whole docs {a['text_bytes'] / a['whole_seconds'] / 1e6:.2f}"
                  f" MB/s, cut {a['text_bytes'] / a['cut_seconds'] / 1e6:.2f} MB/s, cut in "
                  f"batches {a['text_bytes'] / a['batched_seconds'] / 1e6:.2f} MB/s; "
                  + "; ".join(f"{name} {b['text_bytes'] / b['seconds'] / 1e6:.2f} MB/s, ratio "
                              f"{a['seconds'] / b['seconds']:.3f}, tree {b['peak_tree_mb']:.0f} MB"
                              for name, b in bs.items()), flush=True)
        shown = corpus_spec(options.corpus)
        if options.copies > 1:
            shown += f", {options.copies} copies"
        report(rows, corpus=shown, options=options)
        if options.rss_scaling:
            rss_scaling(corpus, model, options.threads, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def report(rows, *, corpus: str, options: Options) -> None:
    med = statistics.median
    a_rows = [a for a, _ in rows]
    print(f"\ncorpus: {corpus} ({a_rows[0]['text_bytes'] / 1e6:.1f} MB of text), "
          f"{options.threads} threads, {options.reps} interleaved reps, medians")
    print("| measurement | text MB/s | tokens/s | pipeline / best raw encoder (per rep) | "
          "MB per CPU-second | peak memory MB (process tree) |")
    print("|---|---:|---:|---:|---:|---:|")
    whole_mb = med(a["text_bytes"] / a["whole_seconds"] / 1e6 for a in a_rows)
    print(f"| raw encoder, whole documents | {whole_mb:.2f} | | | | |")
    print(f"| raw encoder, best (baseline) | "
          f"{med(a['text_bytes'] / a['seconds'] / 1e6 for a in a_rows):.2f} | "
          f"{med(a['tokens'] / a['seconds'] for a in a_rows):,.0f} | 1 | "
          f"{med(a['text_bytes'] / a['cpu_seconds'] / 1e6 for a in a_rows):.2f} | "
          f"{med(a['peak_tree_mb'] for a in a_rows):.0f} |")
    for name in options.variants:
        bs = [b[name] for _, b in rows]
        ratios = [a["seconds"] / b["seconds"] for a, b in zip(a_rows, bs)]
        print(f"| pipeline, {name} | {med(b['text_bytes'] / b['seconds'] / 1e6 for b in bs):.2f} "
              f"| {med(b['tokens'] / b['seconds'] for b in bs):,.0f} | **{med(ratios):.2f}** "
              f"({', '.join(f'{r:.2f}' for r in ratios)}) | "
              f"{med(b['text_bytes'] / b['cpu_seconds'] / 1e6 for b in bs):.2f} | "
              f"{med(b['peak_tree_mb'] for b in bs):.0f} |")
    for name in options.variants:
        print(f"{name}: manifest encoder record {json.dumps(rows[-1][1][name]['encoder'])}")


def rss_scaling(corpus, model, threads, workdir) -> None:
    from pipeline.read.inputs import expand_inputs

    first = expand_inputs(corpus)[0].path
    copies = _copied(first, copies=4, directory=os.path.join(workdir, "copies"))
    one = _spawn("pipeline", corpus=first, model=model, threads=threads,
                 output=os.path.join(workdir, "one"))
    four = _spawn("pipeline", corpus=copies, model=model, threads=threads,
                  output=os.path.join(workdir, "four"))
    print(f"peak memory of the process tree, default options: 1 file {one['peak_tree_mb']:.0f} "
          f"MB, 4 copies {four['peak_tree_mb']:.0f} MB "
          f"(+{(four['peak_tree_mb'] / one['peak_tree_mb'] - 1) * 100:.1f}%)")
    # The 3 extra copies' time: the pipeline's rate once its fixed cost is paid.
    extra = 3 * one["text_bytes"] / (four["seconds"] - one["seconds"]) / 1e6
    print(f"time: 1 file {one['seconds']:.2f} s, 4 copies {four['seconds']:.2f} s: "
          f"{extra:.2f} MB/s on the 3 extra copies; fixed cost (extrapolated to no input) "
          f"{one['seconds'] - one['text_bytes'] / extra / 1e6:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
