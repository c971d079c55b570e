"""Generation throughput (new tokens/s) with and without the key/value cache, side by side.

    python -m bench.generate_bench [--preset=tiny] [--batch_sizes=1,8] [--reps=5]

Decodes greedily with ``trainer.export.decode.generate_ids`` in a ``tf.function`` (the graph
the SavedModel runs; the tokenizer is left out): random prompts of ``--prompt_len`` tokens,
``--max_new_tokens`` new tokens each (EOS never stops a row, so every rep decodes the same
number). Without the cache every step recomputes the whole prefix. The two are timed in
alternation (cache, no cache, cache, ...) after one untimed call each (tracing), and the
median of ``--reps`` is reported. Weights are random: speed does not depend on them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from common.flags import ArgumentParser, add_flags, flag, from_args
from trainer.export.decode import generate_ids
from trainer.model import GPTConfig, build_model, param_count


@dataclasses.dataclass(frozen=True)
class Options:
    preset: str = flag("tiny", help="model preset (trainer.model)")
    vocab_size: int = flag(8192, help="vocabulary (the dev-corpus run's)")
    seq_len: int = flag(256, help="context length (the dev-corpus run's)")
    prompt_len: int = flag(16, help="prompt tokens per row")
    max_new_tokens: int = flag(240, help="new tokens per row (prompt + new <= seq_len)")
    batch_sizes: tuple[int, ...] = flag((1, 8), help="rows decoded together, one run each")
    reps: int = flag(5, help="timed calls per variant")


def decoder(model, *, use_cache: bool):
    """Greedy decoding of a (B, prompt_len) batch; EOS id -1 never stops a row."""

    @tf.function
    def run(prompts, max_new_tokens):
        ids = generate_ids(
            model,
            tf.RaggedTensor.from_tensor(prompts),
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            top_k=0,
            top_p=1.0,
            seed=0,
            eos_id=-1,
            use_cache=use_cache,
        )
        return ids.row_lengths()

    return run


def measure(*, model, options: Options, batch: int) -> dict:
    prompts = np.random.default_rng(batch).integers(
        4, options.vocab_size, size=(batch, options.prompt_len), dtype=np.int32
    )
    max_new = tf.constant(options.max_new_tokens)
    variants = {
        "cache": decoder(model, use_cache=True),
        "no_cache": decoder(model, use_cache=False),
    }
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    new_tokens = {name: int(fn(prompts, max_new).numpy().sum()) for name, fn in variants.items()}
    for _ in range(options.reps):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn(prompts, max_new).numpy()
            seconds[name].append(time.perf_counter() - start)
    rates = {name: new_tokens[name] / statistics.median(s) for name, s in seconds.items()}
    return {
        "batch": batch,
        "new_tokens": new_tokens["cache"],
        **{f"{name}_tokens_per_s": round(rate) for name, rate in rates.items()},
        **{f"{name}_seconds": [round(s, 3) for s in seconds[name]] for name in seconds},
        "speedup": round(rates["cache"] / rates["no_cache"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.generate_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    keras.utils.set_random_seed(0)
    config = GPTConfig.from_preset(
        options.preset, vocab_size=options.vocab_size, seq_len=options.seq_len
    )
    model = build_model(config)
    batches = [int(b) for b in options.batch_sizes]  # a tuple flag parses as strings
    rows = [measure(model=model, options=options, batch=b) for b in batches]
    print(
        json.dumps(
            {
                "device": (
                    tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
                )[0].name,
                "cpus": os.cpu_count(),
                "machine": platform.processor() or platform.machine(),
                "preset": options.preset,
                "parameters": param_count(config),
                "seq_len": options.seq_len,
                "prompt_len": options.prompt_len,
                "results": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
