"""The training input of one run: which order, from which record, and what a resume changes.

``settle_order`` settles a run's order (``--order``, ``--order_block``, ``--order_window``,
``--seed``) and what ``run.json`` records of it; ``train_input`` builds the batches.
``--order=global`` (``trainer.input.global_order``) continues from the number of records
trained on (``examples_seen`` in every checkpoint), whatever the world size and global batch
were before; ``--order=files`` (``trainer.input.files``) skips that many global batches of each
rank's stream, so it continues exactly only on the same world size and global batch.
"""

from __future__ import annotations

import dataclasses
import logging

import tensorflow as tf

from common import storage
from schemas.manifest import Dataset
from trainer.config import BLOCK, SHUFFLED_BLOCK, SHUFFLED_WINDOW, WINDOW, TrainConfig
from trainer.distribute.base import Backend
from trainer.input.files import make_dataset, plan_for_context
from trainer.input.global_order import make_global_dataset, plan_global
from trainer.input.window_order import expected_amplification

log = logging.getLogger(__name__)


def written_shuffled(dataset: Dataset) -> bool:
    """Whether the pipeline wrote the split with ``--shuffle=global`` (its manifest says so)."""
    return (dataset.doc.get("shuffle") or {}).get("mode") == "global"


def resolve_order(*, cfg: TrainConfig, train_data: Dataset, saved: dict | None) -> TrainConfig:
    """``cfg`` with ``--order_block`` and ``--order_window`` of 0 replaced: by the resumed run's
    (``saved``: ``run.json``'s data section, which holds the order of the latest run that
    changed it), so a resume keeps its order, else by the defaults for the split
    (``trainer.config``: a split written with ``--shuffle=global`` is a random permutation
    already, so blocks lose nothing there)."""
    if cfg.order != "global":
        return cfg
    if saved is not None and saved["order"] == "global":
        block = cfg.order_block or saved["order_block"]
        window = cfg.order_window or saved["order_window"]
        return dataclasses.replace(cfg, order_block=block, order_window=window)
    shuffled = written_shuffled(train_data)
    block = cfg.order_block or (SHUFFLED_BLOCK if shuffled else BLOCK)
    window = cfg.order_window or (SHUFFLED_WINDOW if shuffled or block == 1 else WINDOW)
    resolved = dataclasses.replace(cfg, order_block=block, order_window=window)
    if not (cfg.order_block and cfg.order_window):
        log.info("--order=global: blocks of %d records, windows of %d blocks (the defaults for "
                 "a split written %s)", block, window,
                 "with --shuffle=global" if shuffled else "in input order")
    return resolved


# The settings that decide which record each stream position holds; run.json records the
# latest run's, since its checkpoints are positions in its order.
ORDER_KEYS = ("order", "order_block", "order_window", "seed")


def settle_order(
    *,
    cfg: TrainConfig,
    train_data: Dataset,
    saved: dict | None,
    num_pipelines: int,
    examples_seen: int,
) -> tuple[TrainConfig, dict]:
    """The run's config with its order settled, and ``run.json``'s data section for the run.

    ``saved`` is the data section of the run resumed (``run_record.read`` brings older files
    up to date), None for a new run. ``--order_block`` and ``--order_window`` of 0 become the
    resumed run's, else the split's defaults (``resolve_order``). A resume says how it
    continues (``log_resume``) and keeps the first run's data section but for the order and
    seed, which become this run's: a later resume with the flags at 0 must continue this
    order, not the first run's.
    """
    cfg = resolve_order(cfg=cfg, train_data=train_data, saved=saved)
    now = {
        "train_manifest": train_data.manifest_path,
        "num_pipelines": num_pipelines,
        "global_batch_size": cfg.global_batch_size,
        "order": cfg.order,
        "order_block": cfg.order_block,
        "order_window": cfg.order_window,
        "seed": cfg.seed,
    }
    if saved is None:
        return cfg, now
    log_resume(saved=saved, now=now, examples_seen=examples_seen)
    return cfg, {**saved, **{key: now[key] for key in ORDER_KEYS}}


def log_order_reads(*, cfg: TrainConfig, train_data: Dataset, pipelines: int) -> None:
    """Say what a windowed ``--order=global`` keeps and reads from an object store."""
    fs, _ = storage.filesystem(train_data.manifest_path)
    if cfg.order != "global" or cfg.order_window == 1 or storage.is_local(fs):
        return
    log.info("--order=global from an object store: each input pipeline keeps up to %d records "
             "(2 windows of %d blocks of %d); the %d pipelines read about %.1fx the split's bytes "
             "per epoch", 2 * cfg.order_window * cfg.order_block, cfg.order_window,
             cfg.order_block, pipelines,
             expected_amplification(block=cfg.order_block, window=cfg.order_window,
                                    batch=cfg.global_batch_size, ranks=pipelines))


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
                                      window=cfg.order_window, use_segments=use_segments)
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
        saved.get(key) == now[key] for key in ("train_manifest", "order"))
    if same_order and any(saved.get(key) != now[key] for key in ("order_block", "order_window")):
        log.warning("--order_block %d --order_window %d, run.json says %s and %s: continuing "
                    "from global record position %d of another order (until this epoch ends, "
                    "some records repeat and others are left out)", now["order_block"],
                    now["order_window"], saved.get("order_block"), saved.get("order_window"),
                    examples_seen)
    if same_order and saved.get("seed") != now["seed"]:
        log.warning("--seed %d, run.json says %s: continuing from global record position %d of "
                    "another permutation (until this epoch ends, some records repeat and others "
                    "are left out)", now["seed"], saved.get("seed"), examples_seen)
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
