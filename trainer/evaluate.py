"""Loss and perplexity of a model on an eval manifest; ``python -m trainer.evaluate``.

python -m trainer.evaluate --model_dir=runs/tiny --eval_manifest=out/val/manifest.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys

import keras
import numpy as np
import tensorflow as tf

from schemas import manifest
from trainer import checkpoint, compat, run_record
from trainer.data import make_dataset, plan_for_context, steps_per_epoch
from trainer.distribute import (
    BACKENDS,
    Backend,
    BackendUnavailable,
    cluster_from_env,
    make_backend,
    resolve_backend_name,
)
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
class Flags:
    model_dir: str
    eval_manifest: str
    global_batch_size: int
    max_batches: int
    backend: str
    xla: bool


def parse_flags(argv: list[str] | None) -> Flags:
    parser = argparse.ArgumentParser(prog="python -m trainer.evaluate", description=__doc__)
    parser.add_argument("--model_dir", required=True, help="the training run's directory")
    parser.add_argument("--eval_manifest", required=True, help="manifest.json (or its directory)")
    parser.add_argument("--global_batch_size", type=int, default=16, help="records per batch")
    parser.add_argument("--max_batches", type=int, default=0, help="stop after N batches (0: all)")
    parser.add_argument("--backend", default="auto", choices=BACKENDS)
    parser.add_argument(
        "--xla", action=argparse.BooleanOptionalAction, default=False, help="compile with XLA"
    )
    return Flags(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    flags = parse_flags(argv)
    env = dict(os.environ)
    try:
        name = resolve_backend_name(
            flags.backend, env=env, num_gpus=len(tf.config.list_physical_devices("GPU"))
        )
        backend = make_backend(name, cluster=cluster_from_env(env))
        eval_data = manifest.load(flags.eval_manifest)
        result = evaluate(
            model_dir=flags.model_dir,
            eval_data=eval_data,
            backend=backend,
            global_batch_size=flags.global_batch_size,
            max_batches=flags.max_batches,
            xla=flags.xla,
        )
    except (
        BackendUnavailable,
        manifest.ManifestError,
        compat.CompatibilityError,
        FileNotFoundError,
        ValueError,
    ) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if backend.is_chief:
        print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
