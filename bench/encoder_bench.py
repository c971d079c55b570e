"""Benchmark: ``CachedEncoder.encode_batch`` against plain ``processor.encode(texts, ...)``.

Trains a model (or loads ``--model``), checks that every variant returns exactly the plain ids,
then runs the variants interleaved ``--repeats`` times and prints MB/s (UTF-8 input bytes per
wall second), MB per CPU-second (all threads; the figure that matters when every core runs its
own encoder, and the one least disturbed by other load on a shared machine) and the median
per-repeat speed-ups. Each cached run starts from a fresh encoder, so the cache warm-up is
part of the measurement.

Variants:
  plain        processor.encode(batch, num_threads=N)
  plain-cut    the same on texts cut at word boundaries into pieces of <= --cut_kib KiB
               (same ids: the cuts are safe boundaries), cutting time included
  cached       CachedEncoder(num_threads=N).encode_batch(batch)
  cached-warm  the same with an encoder that has first encoded --warm_corpus (untimed): the
               steady state of a long-running pipeline worker (only with --warm_corpus)

Corpus: Pile-format files (zstd JSON Lines with a "text" field) given by --corpus, else this
Python's standard-library sources and pydoc topics.

  python bench/encoder_bench.py --corpus /work/shared/corpus/dev/00.jsonl.zst
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import io
import json
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator

import zstandard

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tokenizer.boundaries import cut_text
from tokenizer.encoder import CachedEncoder, load_model_bytes, processor_from_bytes
from tokenizer.spec import TrainOptions
from tokenizer.train import train_from_texts


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    corpus: tuple[str, ...]
    warm_corpus: tuple[str, ...]
    model: str
    save_model: str
    vocab_size: int
    num_threads: int
    batch_size: int
    repeats: int
    cut_kib: int
    max_docs: int


def parse_args(argv: list[str] | None) -> BenchConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="*", default=[], help="Pile .jsonl.zst files or globs")
    parser.add_argument("--warm_corpus", nargs="*", default=[], help="files to warm a cache on")
    parser.add_argument("--model", default="", help="use this model instead of training one")
    parser.add_argument("--save_model", default="", help="write the trained model here")
    parser.add_argument("--vocab_size", type=int, default=16000)
    parser.add_argument("--num_threads", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=64, help="texts per encode call")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cut_kib", type=int, default=64)
    parser.add_argument("--max_docs", type=int, default=0, help="0 = all")
    args = parser.parse_args(argv)
    return BenchConfig(
        corpus=_expand(args.corpus),
        warm_corpus=_expand(args.warm_corpus),
        model=args.model,
        save_model=args.save_model,
        vocab_size=args.vocab_size,
        num_threads=args.num_threads,
        batch_size=args.batch_size,
        repeats=args.repeats,
        cut_kib=args.cut_kib,
        max_docs=args.max_docs,
    )


def _expand(patterns: list[str]) -> tuple[str, ...]:
    return tuple(p for pattern in patterns for p in sorted(glob.glob(pattern)) or [pattern])


def read_pile(path: str) -> Iterator[str]:
    with open(path, "rb") as raw:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        for line in io.TextIOWrapper(reader, encoding="utf-8"):
            if line.strip():
                yield json.loads(line)["text"]


def stdlib_texts() -> list[str]:
    """Every .py file of the standard library (one text each) and the pydoc topics."""
    import pydoc_data.topics

    root = sysconfig.get_paths()["stdlib"]
    texts = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        if "site-packages" in path:
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
    texts.extend(pydoc_data.topics.topics.values())
    return texts


def batches(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


def run_plain(processor, groups, threads):
    return [ids for batch in groups for ids in processor.encode(batch, num_threads=threads)]


def run_plain_cut(processor, groups, threads, max_bytes):
    out = []
    for batch in groups:
        pieces, owners = [], []
        for i, text in enumerate(batch):
            cut = cut_text(text, max_bytes=max_bytes)
            pieces.extend(cut)
            owners.append(len(cut))
        encoded = iter(processor.encode(pieces, num_threads=threads))
        for count in owners:
            ids: list[int] = []
            for _ in range(count):
                ids.extend(next(encoded))
            out.append(ids)
    return out


def run_cached(model_bytes, groups, threads, warm_groups=()):
    encoder = CachedEncoder(model_proto=model_bytes, num_threads=threads)
    for batch in warm_groups:
        encoder.encode_batch(batch)
    wall, cpu = time.perf_counter(), time.process_time()
    out = [ids for batch in groups for ids in encoder.encode_batch(batch)]
    return out, encoder, (time.perf_counter() - wall, time.process_time() - cpu)


def timed(fn: Callable):
    """((wall s, CPU s of all threads), result); run_cached reports its own times."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    if isinstance(result, tuple):
        return result[-1], result[0]
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def main(argv: list[str] | None = None) -> None:
    config = parse_args(argv)
    if config.corpus:
        texts = [t for path in config.corpus for t in read_pile(path)]
        source = ", ".join(config.corpus)
    else:
        texts = stdlib_texts()
        source = f"Python {sys.version.split()[0]} stdlib sources + pydoc topics"
    if config.max_docs:
        texts = texts[: config.max_docs]
    num_bytes = sum(len(t.encode("utf-8")) for t in texts)
    print(f"corpus: {source}: {len(texts)} texts, {num_bytes / 1e6:.1f} MB")

    if config.model:
        model_bytes = load_model_bytes(config.model)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            options = TrainOptions(vocab_size=config.vocab_size, num_threads=config.num_threads)
            trained = train_from_texts(texts=texts, output_dir=tmp, options=options)
            model_bytes = load_model_bytes(trained.model_path)
        if config.save_model:
            with open(config.save_model, "wb") as handle:
                handle.write(model_bytes)
        print(f"trained vocab_size={trained.vocab_size} in {trained.train_seconds:.1f} s")
    processor = processor_from_bytes(model_bytes)
    print(
        f"model: vocab_size={processor.vocab_size()}, threads={config.num_threads}, "
        f"batch_size={config.batch_size}, cpus={os.cpu_count()}"
    )

    groups = batches(texts, config.batch_size)
    threads, max_bytes = config.num_threads, config.cut_kib * 1024
    variants = {
        "plain": lambda: run_plain(processor, groups, threads),
        f"plain-cut{config.cut_kib}k": lambda: run_plain_cut(processor, groups, threads, max_bytes),
        "cached": lambda: run_cached(model_bytes, groups, threads),
    }
    if config.warm_corpus:
        warm = batches(
            [t for path in config.warm_corpus for t in read_pile(path)], config.batch_size
        )
        variants["cached-warm"] = lambda: run_cached(model_bytes, groups, threads, warm)
    reference = variants["plain"]()
    for name, fn in variants.items():
        got = timed(fn)[1]
        same = len(got) == len(reference) and all(
            list(map(int, a)) == b for a, b in zip(got, reference)
        )
        if not same:
            raise SystemExit(f"{name} returned different ids than plain processor.encode")
    _, encoder, _ = run_cached(model_bytes, groups, threads)
    print(
        f"identical ids: yes; fast path: {encoder.fallback_reason or 'word cache'}; "
        f"words {encoder.words_seen}, encoded by SentencePiece "
        f"{encoder.words_encoded / max(encoder.words_seen, 1):.1%}, "
        f"cached {encoder.num_cached_words}"
    )

    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    names = list(variants)
    load_before = os.getloadavg()[0]
    for rep in range(config.repeats):
        order = names if rep % 2 == 0 else names[::-1]  # interleave A/B/C, then C/B/A
        for name in order:
            seconds[name].append(timed(variants[name])[0])
    print(f"load average (1 min) before/after: {load_before:.1f}/{os.getloadavg()[0]:.1f}")
    for name in names:
        rates = [num_bytes / wall / 1e6 for wall, _ in seconds[name]]
        per_cpu = [num_bytes / cpu / 1e6 for _, cpu in seconds[name]]
        print(
            f"{name:>14}: median {statistics.median(rates):6.2f} MB/s wall "
            f"(min {min(rates):.2f}, max {max(rates):.2f}); "
            f"{statistics.median(per_cpu):6.2f} MB per CPU-second"
        )
    for name in names[1:]:
        ratios = [p[0] / c[0] for p, c in zip(seconds["plain"], seconds[name])]
        cpu_ratios = [p[1] / c[1] for p, c in zip(seconds["plain"], seconds[name])]
        print(
            f"speed-up {name} / plain: median {statistics.median(ratios):.2f}x wall, "
            f"{statistics.median(cpu_ratios):.2f}x CPU, over {config.repeats} interleaved repeats"
        )


if __name__ == "__main__":
    main()
