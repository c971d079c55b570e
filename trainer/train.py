"""Train a GPT on a pilepack dataset: ``python -m trainer.train``.

    python -m trainer.train --train_manifest=out/train/manifest.json \
        --eval_manifest=out/val/manifest.json --model_dir=runs/tiny --preset=tiny \
        --steps=200 --global_batch_size=16 [--backend=auto|single|mirrored|multiworker|horovod]

Flags are generated from ``TrainFlags`` (``trainer.config``); ``trainer.loop.train`` does the
rest. Rerunning the same command resumes from the newest checkpoint in ``--model_dir``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys

import keras
import tensorflow as tf

from common import cli
from common.flags import ArgumentParser, add_flags, flag, from_args
from schemas import manifest
from trainer import loop
from trainer.config import DistributionOptions, ModelOptions, TrainConfig
from trainer.distribute import backend_from_env


@dataclasses.dataclass(frozen=True)
class TrainPaths:
    train_manifest: str = flag(help="training data: manifest.json or its directory")
    model_dir: str = flag(help="checkpoints, run.json, metrics.jsonl, export/")
    eval_manifest: str | None = flag(None, help="evaluation data (same tokenizer and seq_len)")


@dataclasses.dataclass(frozen=True)
class TrainFlags:
    """Everything ``python -m trainer.train`` accepts, one flag per leaf field."""

    paths: TrainPaths
    model: ModelOptions
    train: TrainConfig
    distribution: DistributionOptions


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.train", description=__doc__)
    add_flags(parser, TrainFlags)
    return parser


def run(flags: TrainFlags, *, env: dict) -> None:
    """Pick the backend, load the data, train (``env``: the process environment)."""
    backend = backend_from_env(
        requested=flags.distribution.backend,
        env=env,
        num_gpus=len(tf.config.list_physical_devices("GPU")),
        port=flags.distribution.sagemaker_port,
    )
    logging.basicConfig(
        level=logging.INFO if backend.is_chief else logging.WARNING,
        format=f"%(asctime)s [rank {backend.rank}] %(name)s: %(message)s",
    )
    keras.utils.set_random_seed(flags.train.seed)
    paths = flags.paths
    train_data = manifest.load(paths.train_manifest)
    eval_data = manifest.load(paths.eval_manifest) if paths.eval_manifest else None
    loop.train(
        model_config=flags.model.gpt_config(
            vocab_size=train_data.tokenizer["vocab_size"], seq_len=train_data.seq_len
        ),
        train_config=flags.train,
        backend=backend,
        train_data=train_data,
        eval_data=eval_data,
        model_dir=paths.model_dir,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(from_args(TrainFlags, args), env=dict(os.environ)))


if __name__ == "__main__":
    sys.exit(main())
