"""Loss and perplexity of a model on an eval manifest; ``python -m trainer.evaluate``.

python -m trainer.evaluate --model_dir=runs/tiny --eval_manifest=out/val/manifest.json
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys

import keras
import numpy as np
import tensorflow as tf

from common import cli
from common.flags import ArgumentParser, add_flags, flag, from_args
from schemas import manifest
from trainer import checkpoint, compat, run_record
from trainer.config import DistributionOptions
from trainer.distribute import Backend, backend_from_env
from trainer.input.files import make_dataset, plan_for_context, steps_per_epoch
from trainer.model import build_model
from trainer.step import make_eval_step


class Evaluator:
    """Evaluates ``model`` on one pass over ``dataset`` (or ``max_batches`` global batches).

    Every replica reads its own part (the training split rule, without shuffling); records
    beyond the last full batch of the smallest part are not read.
    """

    def __init__(
        self,
        *,
        model: keras.Model,
        backend: Backend,
        dataset: manifest.Dataset,
        global_batch_size: int,
        max_batches: int = 0,
        xla: bool = False,
    ):
        self._backend = backend
        self._dataset = dataset
        self._global_batch_size = global_batch_size
        self._use_segments = model.gpt_config.use_segments
        self._step = make_eval_step(
            model=model, backend=backend, pad_id=dataset.tokenizer["special_ids"]["pad"], xla=xla
        )
        steps = steps_per_epoch(
            dataset=dataset,
            global_batch_size=global_batch_size,
            num_pipelines=backend.world_size,
            num_replicas=backend.num_replicas,
        )
        self.steps = min(steps, max_batches) if max_batches else steps

    def _dataset_fn(self, context: tf.distribute.InputContext) -> tf.data.Dataset:
        plan = plan_for_context(
            dataset=self._dataset, context=context, global_batch_size=self._global_batch_size
        )
        return make_dataset(
            plan=plan,
            spec=self._dataset.record_spec,
            seed=0,
            shuffle=False,
            repeat=False,
            use_segments=self._use_segments,
        )

    def __call__(self) -> dict:
        iterator = iter(self._backend.distribute_dataset(self._dataset_fn))
        totals = np.zeros(2, dtype=np.float64)
        for _ in range(self.steps):
            totals += self._step(iterator).numpy()
        loss = totals[0] / max(totals[1], 1.0)
        return {
            "loss": float(loss),
            "perplexity": float(math.exp(min(loss, 700.0))),
            "tokens": int(totals[1]),
            "batches": self.steps,
        }


def evaluate(
    *,
    model_dir: str,
    eval_data: manifest.Dataset,
    backend: Backend,
    global_batch_size: int,
    max_batches: int = 0,
    xla: bool = False,
) -> dict:
    """Rebuild the model saved in ``model_dir``, load its newest checkpoint, evaluate it."""
    record = run_record.read(model_dir)
    if record is None:
        raise FileNotFoundError(
            f"{model_dir}: no {run_record.RUN_FILE}; is this a trainer model_dir?"
        )
    compat.verify_tokenizer_file(eval_data)
    compat.check_model_fits(eval_data, record.model, tokenizer=record.tokenizer)
    with backend.scope():
        model = build_model(record.model)
    path = checkpoint.restore_model(model, model_dir=model_dir)
    result = Evaluator(
        model=model,
        backend=backend,
        dataset=eval_data,
        global_batch_size=global_batch_size,
        max_batches=max_batches,
        xla=xla,
    )()
    return {**result, "checkpoint": path, "eval_manifest": eval_data.manifest_path}


@dataclasses.dataclass(frozen=True)
class EvaluateFlags:
    """Everything ``python -m trainer.evaluate`` accepts."""

    model_dir: str = flag(help="the training run's directory")
    eval_manifest: str = flag(help="manifest.json (or its directory)")
    global_batch_size: int = flag(16, help="records per batch")
    max_batches: int = flag(0, help="stop after N batches (0: all)")
    xla: bool = flag(False, help="compile with XLA")
    distribution: DistributionOptions = dataclasses.field(default_factory=DistributionOptions)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.evaluate", description=__doc__)
    add_flags(parser, EvaluateFlags)
    return parser


def run(flags: EvaluateFlags, *, env: dict) -> None:
    """Evaluate and print the result as one JSON line (on the chief)."""
    backend = backend_from_env(
        requested=flags.distribution.backend,
        env=env,
        num_gpus=len(tf.config.list_physical_devices("GPU")),
        port=flags.distribution.sagemaker_port,
    )
    result = evaluate(
        model_dir=flags.model_dir,
        eval_data=manifest.load(flags.eval_manifest),
        backend=backend,
        global_batch_size=flags.global_batch_size,
        max_batches=flags.max_batches,
        xla=flags.xla,
    )
    if backend.is_chief:
        print(json.dumps(result, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(from_args(EvaluateFlags, args), env=dict(os.environ)))


if __name__ == "__main__":
    sys.exit(main())
