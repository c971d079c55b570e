"""Train a GPT on a pilepack dataset: ``python -m trainer.train``.

    python -m trainer.train --train_manifest=out/train/manifest.json \
        --eval_manifest=out/val/manifest.json --model_dir=runs/tiny --preset=tiny \
        --steps=200 --global_batch_size=16 [--backend=auto|single|mirrored|multiworker|horovod]

Flags are generated from ``TrainFlags`` (here: the paths and ``trainer.config``'s option
groups); ``trainer.loop.train`` does the rest. Rerunning the same command resumes from the
newest checkpoint in ``--model_dir``.

Inside a SageMaker training job, SageMaker's conventions (``trainer.sagemaker.env``) supply the
defaults of ``--train_manifest`` / ``--eval_manifest`` (the ``train`` and ``eval`` channels),
``--model_dir`` (``/opt/ml/checkpoints``), ``--export_dir`` (``SM_MODEL_DIR``) and the cluster
(``SM_HOSTS`` / ``SM_CURRENT_HOST``); flags given on the command line win.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import posixpath
import shutil
import sys

import keras
import tensorflow as tf

from common import cli, storage
from common.flags import ArgumentParser, add_flags, flag, from_args
from schemas import manifest
from trainer import checkpoint, loop
from trainer.config import DistributionOptions, ModelOptions, TrainConfig
from trainer.distribute import backend_from_env
from trainer.sagemaker import env as sagemaker_env


@dataclasses.dataclass(frozen=True)
class TrainPaths:
    train_manifest: str = flag(help="training data: manifest.json or its directory")
    model_dir: str = flag(help="checkpoints, run.json, metrics.jsonl, export/")
    eval_manifest: str | None = flag(None, help="evaluation data (same tokenizer and seq_len)")
    export_dir: str | None = flag(
        None,
        help="also copy the final model (MODEL_DIR/export/) here, from the chief; on SageMaker "
        "SM_MODEL_DIR, which SageMaker uploads as the job's model artifact",
    )


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


def copy_export(*, model_dir: str, export_dir: str) -> list[str]:
    """Copy ``model_dir/export/`` file by file into ``export_dir``; return the files written.
    Names starting with a dot (leftovers of an interrupted write) are not copied."""
    source_fs, source = storage.filesystem(storage.join(model_dir, checkpoint.EXPORT_DIR))
    written = []
    for path in sorted(source_fs.find(source)):
        relative = posixpath.relpath(path, source)
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        target = storage.join(export_dir, relative)
        with source_fs.open(path, "rb") as reader, storage.atomic_open(target) as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
        written.append(target)
    return written


def run(flags: TrainFlags, *, env: dict, sagemaker: sagemaker_env.SageMakerEnv | None = None):
    """Pick the backend, load the data, train (``env``: the process environment;
    ``sagemaker``: the SageMaker job this runs in, if any)."""
    num_gpus = len(tf.config.list_physical_devices("GPU"))
    if sagemaker is not None:
        sagemaker.check_gpus(visible=num_gpus)
        env = {**sagemaker.cluster_env(), **env}
    backend = backend_from_env(
        requested=flags.distribution.backend,
        env=env,
        num_gpus=num_gpus,
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
    if paths.export_dir and backend.is_chief:
        written = copy_export(model_dir=paths.model_dir, export_dir=paths.export_dir)
        logging.getLogger(__name__).info("copied %d files to %s", len(written), paths.export_dir)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)

    def body():
        env = dict(os.environ)
        sagemaker = sagemaker_env.detect(env)
        defaults = sagemaker.train_defaults() if sagemaker else []
        args = build_parser().parse_args(defaults + argv)
        run(from_args(TrainFlags, args), env=env, sagemaker=sagemaker)

    return cli.run_main(body)


if __name__ == "__main__":
    sys.exit(main())
