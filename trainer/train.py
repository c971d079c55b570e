"""Train a GPT on a pilepack dataset: ``python -m trainer.train``.

    python -m trainer.train --train_manifest=out/train/manifest.json \
        --eval_manifest=out/val/manifest.json --model_dir=runs/tiny --preset=tiny \
        --steps=200 --global_batch_size=16 [--backend=auto|single|mirrored|multiworker|horovod]

Flags are parsed here into ``GPTConfig`` and ``TrainConfig``; ``trainer.loop.train`` does the rest.
Rerunning the same command resumes from the newest checkpoint in ``--model_dir``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import keras
import tensorflow as tf

from schemas import manifest
from trainer import compat, loop
from trainer.config import TrainConfig
from trainer.distribute import (
    BACKENDS,
    BackendUnavailable,
    cluster_from_env,
    make_backend,
    resolve_backend_name,
)
from trainer.distribute.resolve import SAGEMAKER_PORT
from trainer.model import PRESETS, GPTConfig


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trainer.train",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = p.add_argument
    add("--train_manifest", required=True, help="training data: manifest.json or its directory")
    add("--eval_manifest", default=None, help="evaluation data (same tokenizer and seq_len)")
    add("--model_dir", required=True, help="checkpoints, run.json, metrics.jsonl, export/")
    add("--preset", default="tiny", choices=sorted(PRESETS), help="model size")
    add("--dropout", type=float, default=0.0, help="dropout rate")
    add(
        "--use_segments",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="mask attention at document boundaries (needs shards with segment ids)",
    )
    add(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="mixed precision: bfloat16 compute, float32 weights and optimizer state",
    )
    add(
        "--recompute",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="recompute block activations in the backward pass (less memory, ~1/3 more compute)",
    )
    add(
        "--xla",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="compile the step with XLA",
    )
    add("--steps", type=int, required=True, help="train until this global step")
    add("--global_batch_size", type=int, required=True, help="records per step over all replicas")
    add("--learning_rate", type=float, default=6e-4, help="peak learning rate")
    add("--min_lr_ratio", type=float, default=0.1, help="final LR as a fraction of the peak")
    add("--warmup_steps", type=int, default=100, help="linear warm-up steps")
    add("--weight_decay", type=float, default=0.1, help="AdamW weight decay")
    add("--beta_1", type=float, default=0.9)
    add("--beta_2", type=float, default=0.95)
    add("--clip_norm", type=float, default=1.0, help="global gradient-norm clip (0: off)")
    add(
        "--scale_lr",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="multiply the learning rate by the number of replicas (Horovod's recipe)",
    )
    add("--seed", type=int, default=0, help="initialization and data order")
    add("--shuffle_buffer", type=int, default=10_000, help="records per shuffle buffer")
    add("--log_every", type=int, default=10, help="steps between log lines / metrics rows")
    add("--checkpoint_every", type=int, default=500, help="steps between checkpoints")
    add("--keep_checkpoints", type=int, default=3, help="checkpoints kept")
    add("--eval_every", type=int, default=0, help="steps between evaluations (0: at the end)")
    add("--eval_batches", type=int, default=0, help="batches per evaluation (0: whole manifest)")
    add("--backend", default="auto", choices=BACKENDS, help="distribution backend")
    add(
        "--sagemaker_port",
        type=int,
        default=SAGEMAKER_PORT,
        help="port for MultiWorkerMirroredStrategy when TF_CONFIG is built from SM_HOSTS",
    )
    return p


TRAIN_FIELDS = (
    "steps",
    "global_batch_size",
    "learning_rate",
    "min_lr_ratio",
    "warmup_steps",
    "weight_decay",
    "beta_1",
    "beta_2",
    "clip_norm",
    "scale_lr",
    "seed",
    "shuffle_buffer",
    "log_every",
    "checkpoint_every",
    "keep_checkpoints",
    "eval_every",
    "eval_batches",
    "xla",
)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = dict(os.environ)
    try:
        train_config = TrainConfig(**{name: getattr(args, name) for name in TRAIN_FIELDS})
        name = resolve_backend_name(
            args.backend, env=env, num_gpus=len(tf.config.list_physical_devices("GPU"))
        )
        backend = make_backend(name, cluster=cluster_from_env(env, port=args.sagemaker_port))
    except (ValueError, BackendUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if backend.is_chief else logging.WARNING,
        format=f"%(asctime)s [rank {backend.rank}] %(name)s: %(message)s",
    )
    keras.utils.set_random_seed(args.seed)
    try:
        train_data = manifest.load(args.train_manifest)
        eval_data = manifest.load(args.eval_manifest) if args.eval_manifest else None
        model_config = GPTConfig.from_preset(
            args.preset,
            vocab_size=train_data.tokenizer["vocab_size"],
            seq_len=train_data.seq_len,
            dropout=args.dropout,
            use_segments=args.use_segments,
            recompute=args.recompute,
            dtype_policy="mixed_bfloat16" if args.bf16 else "float32",
        )
        loop.train(
            model_config=model_config,
            train_config=train_config,
            backend=backend,
            train_data=train_data,
            eval_data=eval_data,
            model_dir=args.model_dir,
        )
    except (manifest.ManifestError, compat.CompatibilityError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
