"""Benchmark: the encoder backends against plain ``processor.encode(texts, ...)``.

Trains a model (or loads ``--model``), checks that every variant returns exactly the plain ids,
then runs the variants interleaved ``--repeats`` times and prints MB/s (UTF-8 input bytes per
wall second), MB per CPU-second (all threads; the figure that matters when every core runs its
own encoder, and the one least disturbed by other load on the machine) and the median
per-repeat speed-ups. Each cached run starts from a fresh encoder, so the cache warm-up is
part of the measurement.

Variants:
  plain        processor.encode(batch, num_threads=N)
  plain-cut    the same on texts cut at word boundaries into pieces of <= --cut_kib KiB
               (same ids: the cuts are safe boundaries), cutting time included
  cached       CachedEncoder(num_threads=N).encode_batch(batch)
  cached-warm  the same with an encoder that has first encoded --warm_corpus (untimed): the
               steady state of a long-running pipeline worker (only with --warm_corpus)
  gigatoken    GigatokenBackend(num_threads=N).encode_batch(batch) (tokenizer.backends), the
               model loaded once (untimed)
  gigatoken-per-text  GigatokenBackend(num_threads=1) from a fresh load each run: one call per
               text, gigatoken's word cache kept from call to call (bounded by
               --cache_chars), what the pipeline's per-text path (a worker per core) runs
  gigatoken+guard  the same through tokenizer.guard.ChunkEncoder with --check_every: what a
               pipeline worker runs, the exactness guard's SentencePiece checks included

Corpus: Pile-format files given by --corpus, else the built-in sample (datagen.sample.cache).
The figures in BENCHMARKS.md come from one file of a 50 MB Pile-format corpus:

  python -m bench.encoder_bench --corpus="$DEV/00.jsonl.zst"
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from bench.corpus import corpus_spec, corpus_texts
from common.flags import ArgumentParser, add_flags, flag, from_args
from tokenizer.backends import BackendUnavailable, GigatokenBackend, reference_backend
from tokenizer.backends.gigatoken_backend import CACHE_CHARS
from tokenizer.boundaries import cut_text
from tokenizer.encoder import CachedEncoder, load_model_bytes, processor_from_bytes
from tokenizer.guard import ChunkEncoder
from tokenizer.spec import TrainOptions
from tokenizer.train import train_from_texts

_FILES_HELP = "comma list of Pile-format files, globs or directories"


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    corpus: str = flag("", help=f"{_FILES_HELP}; empty: the built-in sample")
    warm_corpus: str = flag("", help=f"{_FILES_HELP} to warm a cache on; empty: no cached-warm")
    model: str = flag("", help="use this model instead of training one")
    save_model: str = flag("", help="write the trained model here")
    vocab_size: int = flag(16000, help="vocabulary of the model trained on the corpus")
    num_threads: int = flag(2, help="encoder threads")
    batch_size: int = flag(64, help="texts per encode call")
    repeats: int = flag(5, help="interleaved repetitions of every variant")
    cut_kib: int = flag(64, help="largest piece of plain-cut, in KiB")
    max_docs: int = flag(0, help="encode only the first N documents; 0: all")
    check_every: int = flag(64, help="the guard's sample of gigatoken+guard (1 in N documents)")
    cache_chars: int = flag(CACHE_CHARS, help="gigatoken-per-text: characters between two drops "
                            "of the word cache")


def parse_args(argv: list[str] | None) -> BenchConfig:
    parser = ArgumentParser(prog="python -m bench.encoder_bench", description=__doc__)
    add_flags(parser, BenchConfig)
    return from_args(BenchConfig, parser.parse_args(argv))


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


def run_backend(backend, groups):
    return [ids for batch in groups for ids in backend.encode_batch(batch)]


def run_per_text(model_bytes, groups, cache_chars):
    backend = GigatokenBackend(model_proto=model_bytes, cache_chars=cache_chars)
    wall, cpu = time.perf_counter(), time.process_time()
    out = [ids for batch in groups for ids in backend.encode_batch(batch)]
    return out, backend, (time.perf_counter() - wall, time.process_time() - cpu)


def run_guarded(encoder, groups):
    out = []
    for number, batch in enumerate(groups):
        # Each batch plays one chunk of its own file; lines as in a file.
        ids, _ = encoder.encode(batch, path=f"batch-{number}", lines=list(range(1, len(batch) + 1)))
        out += ids
    return out


def timed(fn: Callable):
    """((wall s, CPU s of all threads), result); run_cached reports its own times."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    if isinstance(result, tuple):
        return result[-1], result[0]
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    source = corpus_spec(config.corpus)
    texts = corpus_texts(source)
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
        warm = batches(corpus_texts(config.warm_corpus), config.batch_size)
        variants["cached-warm"] = lambda: run_cached(model_bytes, groups, threads, warm)
    try:
        giga = GigatokenBackend(model_proto=model_bytes, num_threads=threads)
        guarded = ChunkEncoder(model_proto=model_bytes, encoder="gigatoken", num_threads=threads,
                               check_every=config.check_every)
        variants["gigatoken"] = lambda: run_backend(giga, groups)
        variants["gigatoken-per-text"] = lambda: run_per_text(model_bytes, groups,
                                                             config.cache_chars)
        variants["gigatoken+guard"] = lambda: run_guarded(guarded, groups)
    except BackendUnavailable as err:
        print(f"gigatoken: not measured ({err})")
    reference = variants["plain"]()
    # The backends return the documented encoding (U+2581 as byte pieces): compare with that.
    documented = run_backend(reference_backend(model_proto=model_bytes, num_threads=threads),
                             groups)
    for name, fn in variants.items():
        got = timed(fn)[1]
        want = documented if name.startswith("gigatoken") else reference
        same = len(got) == len(want) and all(
            list(map(int, a)) == list(map(int, b)) for a, b in zip(got, want)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
