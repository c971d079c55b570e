"""The training input of one run: which order, from which record, and what a resume changes.

``--order=global`` (``trainer.global_order``) continues from the number of records trained on
(``examples_seen`` in every checkpoint), whatever the world size and global batch were before;
``--order=files`` (``trainer.data``) skips that many global batches of each rank's stream, so
it continues exactly only on the same world size and global batch.
"""

from __future__ import annotations

import logging

import tensorflow as tf

from schemas.manifest import Dataset
from trainer.config import TrainConfig
from trainer.data import make_dataset, plan_for_context
from trainer.distribute.base import Backend
from trainer.global_order import make_global_dataset, plan_global

log = logging.getLogger(__name__)


def pipeline_input(
    context: tf.distribute.InputContext,
    *,
    train_data: Dataset,
    cfg: TrainConfig,
    examples_seen: int,
    use_segments: bool,
) -> tuple[tf.data.Dataset, tuple[str, ...]]:
    """One input pipeline's batches after ``examples_seen`` records, and the shards it reads.

    ``--order=global`` continues from that stream position, whatever the world size and global
    batch were before; ``--order=files`` skips that many batches of this split's stream.
    """
    if cfg.order == "global":
        plan = plan_global(dataset=train_data, context=context,
                           global_batch_size=cfg.global_batch_size)
        dataset = make_global_dataset(plan=plan, spec=train_data.record_spec, seed=cfg.seed,
                                      start=examples_seen, block=cfg.order_block,
                                      use_segments=use_segments)
        return dataset, plan.files
    plan = plan_for_context(dataset=train_data, context=context,
                            global_batch_size=cfg.global_batch_size)
    dataset = make_dataset(
        plan=plan,
        spec=train_data.record_spec,
        seed=cfg.seed,
        shuffle_buffer=cfg.shuffle_buffer,
        use_segments=use_segments,
        start_batch=examples_seen // cfg.global_batch_size * plan.replicas_per_pipeline,
    )
    return dataset, plan.files


def train_input(
    *,
    backend: Backend,
    train_data: Dataset,
    cfg: TrainConfig,
    examples_seen: int,
    use_segments: bool,
    input_files: list,
    map_input=None,
):
    """The distributed training batches, after the ``examples_seen`` records trained on."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset, files = pipeline_input(context, train_data=train_data, cfg=cfg,
                                         examples_seen=examples_seen, use_segments=use_segments)
        input_files.extend(files)
        return map_input(dataset) if map_input else dataset

    return backend.distribute_dataset(dataset_fn)


def log_resume(*, saved: dict, now: dict, examples_seen: int) -> None:
    """Say how a resumed run's data order continues the run recorded in ``run.json``."""
    if saved == now:
        return
    same_order = now["order"] == "global" and all(
        saved.get(key) == now[key] for key in ("train_manifest", "order", "order_block"))
    if not same_order:
        log.warning("resuming with a different data split (%s, was %s): batches after the "
                    "restart differ from an uninterrupted run's", now, saved)
        return
    if saved.get("num_pipelines") != now["num_pipelines"]:
        log.info("resuming on %d input pipelines (run.json: %s): --order=global gives every step "
                 "the same records on any number", now["num_pipelines"], saved.get("num_pipelines"))
    if saved.get("global_batch_size") != now["global_batch_size"]:
        log.warning("--global_batch_size is %d, run.json says %s: continuing from global record "
                    "position %d of the same order, in batches of %d (the steps after it differ "
                    "from a run that kept the old size)", now["global_batch_size"],
                    saved.get("global_batch_size"), examples_seen, now["global_batch_size"])
