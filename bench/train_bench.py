"""Training throughput (tokens/s) of a preset through the real training loop.

    python -m bench.train_bench [--manifest=PATH] [--preset=tiny] [--global_batch_size=16]

Runs ``trainer.loop.train`` (single backend, no eval) for ``--warmup`` steps, then times
``--steps`` more, once per variant (float32; float32 + XLA; bf16 + XLA with ``--bf16``), and
reports tokens/s (input positions: global batch x seq_len per step) and, given the machine's
peak FLOP/s (``--peak_tflops``), model FLOPs utilization with 6N + 12 L h T FLOPs per token.
Without ``--manifest`` it trains on a synthetic dataset (vocabulary 8192, seq_len 256, the
shape of the dev-corpus run in BENCHMARKS.md).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import sys
import tempfile

import keras
import tensorflow as tf

from bench.input_bench import synthetic_dataset
from common.flags import ArgumentParser, add_flags, flag, from_args
from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute import make_backend
from trainer.model import GPTConfig, param_count


@dataclasses.dataclass(frozen=True)
class Options:
    manifest: str = flag("", help="a dataset's manifest; empty: a synthetic dataset")
    preset: str = flag("tiny", help="model preset (trainer.model)")
    global_batch_size: int = flag(16, help="sequences per step, all replicas together")
    warmup: int = flag(10, help="untimed steps first (compilation included)")
    steps: int = flag(40, help="timed steps")
    bf16: bool = flag(False, help="also run bf16 + XLA (GPUs)")
    peak_tflops: float = flag(0.0, help="device peak TFLOP/s, for MFU; 0: no MFU")


def flops_per_token(config: GPTConfig) -> float:
    """Training FLOPs per token: 6 N (matmuls, forward + backward) + 12 L h T (attention)."""
    return 6 * param_count(config) + 12 * config.num_layers * config.hidden_dim * config.seq_len


def run_variant(*, data, backend, preset, batch, warmup, steps, xla, bf16, work_dir) -> dict:
    keras.utils.set_random_seed(0)
    config = GPTConfig.from_preset(
        preset,
        vocab_size=data.tokenizer["vocab_size"],
        seq_len=data.seq_len,
        dtype_policy="mixed_bfloat16" if bf16 else "float32",
    )
    train = TrainConfig(
        steps=warmup + steps,
        global_batch_size=batch,
        log_every=warmup,
        checkpoint_every=10**9,
        keep_checkpoints=1,
        xla=xla,
        warmup_steps=0,
    )
    result = loop.train(
        model_config=config,
        train_config=train,
        backend=backend,
        train_data=data,
        model_dir=work_dir,
        export=False,  # timing only: an export per variant would add minutes on a GPU check
    )
    rate = result.history[-1][
        "tokens_per_s"
    ]  # the timed steps only: the first row holds compilation
    return {
        "preset": preset,
        "parameters": param_count(config),
        "xla": xla,
        "bf16": bf16,
        "tokens_per_s": round(rate),
        "model_tflops_per_s": round(rate * flops_per_token(config) / 1e12, 3),
        "final_loss": round(result.history[-1]["loss"], 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.train_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    logging.basicConfig(level=logging.WARNING)
    backend = make_backend("single")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = options.manifest
        if not path:
            os.makedirs(os.path.join(tmp, "data"))
            path = synthetic_dataset(
                os.path.join(tmp, "data"), records=4000, seq_len=256, shards=2, vocab_size=8192
            )
        data = manifest.load(path)
        variants = [(False, False), (True, False)] + ([(True, True)] if options.bf16 else [])
        for index, (xla, bf16) in enumerate(variants):
            row = run_variant(
                data=data,
                backend=backend,
                preset=options.preset,
                batch=options.global_batch_size,
                warmup=options.warmup,
                steps=options.steps,
                xla=xla,
                bf16=bf16,
                work_dir=os.path.join(tmp, f"run{index}"),
            )
            if options.peak_tflops:
                row["mfu"] = round(row["model_tflops_per_s"] / options.peak_tflops, 4)
            rows.append(row)
    print(
        json.dumps(
            {
                "device": (
                    tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
                )[0].name,
                "cpus": os.cpu_count(),
                "machine": platform.processor() or platform.machine(),
                "global_batch_size": options.global_batch_size,
                "seq_len": data.seq_len,
                "results": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
