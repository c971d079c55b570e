"""Pipeline throughput against the bare SentencePiece encoder, side by side (issue: performance).

    python bench/pipeline_bench.py [--corpus GLOB] [--tokenizer_model PATH] [--reps 3]
                                   [--rss_scaling]

A: the raw encoder alone, at its best: every document's text already in memory, encoded by
   ``SentencePieceProcessor.encode(texts, num_threads=cores)`` (no I/O, no Beam) two ways --
   whole documents, and documents cut at safe word boundaries into <= 64 KiB pieces (same ids,
   1.3-1.6x faster: BPE slows down on long inputs) -- and the faster of the two is the baseline.
B: the full pipeline (DirectRunner, same model via --tokenizer_model, same cores): read,
   decompress, parse, tokenize, pack, serialize, write shards, manifest.

Each measurement runs in a fresh subprocess (so peak RSS is its own), interleaved
A, B, A, B, ...; the report gives text MB/s and tokens/s of each, the median ratio B/A, and the
pipeline's peak RSS. ``--rss_scaling`` also runs the pipeline on one file and on four copies of
it, and reports the peak RSS of both. Default corpus: the built-in sample; real figures:
``--corpus '../shared/corpus/dev/0*.jsonl.zst'``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _texts(corpus: str) -> list[str]:
    from pipeline.config import ReadConfig
    from pipeline.inputs import expand_inputs
    from pipeline.read import iter_documents

    return [doc.text for file in expand_inputs(corpus)
            for doc in iter_documents(file, config=ReadConfig())]


def child_encoder(corpus: str, model: str, threads: int) -> dict:
    import sentencepiece as spm

    from tokenizer.boundaries import cut_text

    texts = _texts(corpus)
    sp = spm.SentencePieceProcessor(model_file=model)
    started = time.perf_counter()
    ids = sp.encode(texts, num_threads=threads)
    whole = time.perf_counter() - started
    started = time.perf_counter()
    pieces = [piece for text in texts for piece in cut_text(text, max_bytes=65536)]
    cut_ids = sp.encode(pieces, num_threads=threads)
    cut = time.perf_counter() - started
    assert sum(map(len, cut_ids)) == sum(map(len, ids)), "cutting changed the encoding"
    return {"seconds": min(whole, cut), "whole_seconds": whole, "cut_seconds": cut,
            "text_bytes": sum(len(t.encode()) for t in texts),
            "tokens": sum(map(len, ids)) + len(ids)}  # + one EOS per document, as written


def child_pipeline(corpus: str, model: str, threads: int, output: str) -> dict:
    import apache_beam  # noqa: F401  imports are not the work measured (as for the encoder)

    from pipeline import run
    from tokenizer import prepare  # noqa: F401

    started = time.perf_counter()
    code = run.main(["--input", corpus, "--output", output, "--tokenizer_model", model,
                     "--seq_len=2048", f"--num_threads={threads}", "--overwrite",
                     "--runner=DirectRunner"])
    seconds = time.perf_counter() - started
    if code:
        raise SystemExit(f"pipeline failed with exit status {code}")
    doc = json.load(open(os.path.join(output, "manifest.json")))
    return {"seconds": seconds, "text_bytes": doc["totals"]["text_bytes"],
            "tokens": doc["totals"]["tokens"]}


def _spawn(kind: str, **kwargs) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--child_args", json.dumps(kwargs)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ensure_model(corpus: str, workdir: str) -> str:
    from pipeline import run

    output = os.path.join(workdir, "tokenizer-run")
    code = run.main(["--input", corpus, "--output", output, "--vocab_size=32000",
                     "--seq_len=2048", "--runner=DirectRunner"])
    if code:
        raise SystemExit("could not train the benchmark tokenizer")
    return os.path.join(output, "tokenizer.model")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=None, help="input glob; default: built-in sample")
    parser.add_argument("--tokenizer_model", default=None, help="default: train one (32k BPE)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rss_scaling", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child_args", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    if args.child:
        kwargs = json.loads(args.child_args)
        result = (child_encoder if args.child == "encoder" else child_pipeline)(**kwargs)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    workdir = tempfile.mkdtemp(prefix="pilepack-bench-")
    try:
        if args.corpus is None:
            from pipeline.sample_data import ensure_sample

            args.corpus = ",".join(ensure_sample().train_paths)
        model = args.tokenizer_model or _ensure_model(args.corpus, workdir)
        rows = []
        for rep in range(args.reps):
            a = _spawn("encoder", corpus=args.corpus, model=model, threads=args.threads)
            b = _spawn("pipeline", corpus=args.corpus, model=model, threads=args.threads,
                       output=os.path.join(workdir, "out"))
            rows.append((a, b))
            print(f"rep {rep}: encoder whole docs {a['text_bytes'] / a['whole_seconds'] / 1e6:.2f}"
                  f" MB/s, cut {a['text_bytes'] / a['cut_seconds'] / 1e6:.2f} MB/s, "
                  f"pipeline {b['text_bytes'] / b['seconds'] / 1e6:.2f} MB/s, "
                  f"ratio {a['seconds'] / b['seconds']:.3f}, "
                  f"pipeline peak RSS {b['peak_rss_mb']:.0f} MB", flush=True)
        report(rows, args)
        if args.rss_scaling:
            rss_scaling(args.corpus, model, args.threads, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(rows, args) -> None:
    ratios = [a["seconds"] / b["seconds"] for a, b in rows]
    med = statistics.median
    a_mb = med(a["text_bytes"] / a["seconds"] / 1e6 for a, _ in rows)
    b_mb = med(b["text_bytes"] / b["seconds"] / 1e6 for _, b in rows)
    a_tok = med(a["tokens"] / a["seconds"] for a, _ in rows)
    b_tok = med(b["tokens"] / b["seconds"] for _, b in rows)
    print(f"\ncorpus: {args.corpus} ({rows[0][0]['text_bytes'] / 1e6:.1f} MB of text), "
          f"{args.threads} threads, {args.reps} interleaved reps")
    print("| measurement | text MB/s | tokens/s | peak RSS MB |")
    print("|---|---:|---:|---:|")
    whole_mb = med(a["text_bytes"] / a["whole_seconds"] / 1e6 for a, _ in rows)
    print(f"| raw encoder, whole documents | {whole_mb:.2f} | | |")
    print(f"| raw encoder, best (baseline) | {a_mb:.2f} | {a_tok:,.0f} | "
          f"{med(a['peak_rss_mb'] for a, _ in rows):.0f} |")
    print(f"| full pipeline | {b_mb:.2f} | {b_tok:,.0f} | "
          f"{med(b['peak_rss_mb'] for _, b in rows):.0f} |")
    print(f"median ratio pipeline/encoder throughput: {med(ratios):.3f} "
          f"(per rep: {', '.join(f'{r:.3f}' for r in ratios)})")


def rss_scaling(corpus, model, threads, workdir) -> None:
    from pipeline.inputs import expand_inputs

    first = expand_inputs(corpus)[0].path
    copies = os.path.join(workdir, "copies")
    os.makedirs(copies, exist_ok=True)
    for i in range(4):
        shutil.copy(first, os.path.join(copies, f"{i:02d}.jsonl.zst"))
    one = _spawn("pipeline", corpus=first, model=model, threads=threads,
                 output=os.path.join(workdir, "one"))
    four = _spawn("pipeline", corpus=copies, model=model, threads=threads,
                  output=os.path.join(workdir, "four"))
    print(f"peak RSS: 1 file {one['peak_rss_mb']:.0f} MB, 4 copies {four['peak_rss_mb']:.0f} MB "
          f"(+{(four['peak_rss_mb'] / one['peak_rss_mb'] - 1) * 100:.1f}%)")


if __name__ == "__main__":
    main()
