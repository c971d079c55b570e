"""The custom training loop (``tf.GradientTape``, not ``model.fit``), one path for all backends."""

from __future__ import annotations

import dataclasses
import json
import logging
import time

import keras
import tensorflow as tf

from common import storage
from common.errors import InputError
from schemas.manifest import Dataset
from trainer import checkpoint, compat, run_record
from trainer.config import TrainConfig
from trainer.data import make_dataset, plan_for_context
from trainer.distribute.base import Backend
from trainer.evaluate import Evaluator
from trainer.model import GPTConfig, build_model, param_count
from trainer.observe.telemetry import Telemetry
from trainer.optim import build_optimizer
from trainer.step import make_batch_train_step

log = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What one process saw. Attributes: start_step (0, or the step resumed from); final_step;
    history (one dict per logged step); evals (one dict per evaluation); input_files (the shards
    this process read); model (the trained Keras model)."""

    start_step: int
    final_step: int
    history: list
    evals: list
    input_files: tuple
    model: keras.Model


def _check_run(
    *,
    model_config: GPTConfig,
    train_data: Dataset,
    eval_data: Dataset | None,
    saved: run_record.RunRecord | None,
    model_dir: str,
) -> None:
    """Refuse a model_dir of another model, and data that does not fit the model."""
    if saved is not None and saved.model != model_config:
        raise compat.CompatibilityError(
            f"{model_dir} holds a run of a different model ({saved.model}); resume with the "
            f"same --preset and model flags, or use a new --model_dir"
        )
    compat.verify_tokenizer_file(train_data)
    compat.check_model_fits(train_data, model_config, tokenizer=saved.tokenizer if saved else None)
    if eval_data is not None:
        compat.check_same_tokenization(train_data, eval_data)


def _append_metrics(model_dir: str, row: dict) -> None:
    fs, path = storage.filesystem(storage.join(model_dir, METRICS_FILE))
    with fs.open(path, "a") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


def _train_input(
    *,
    backend: Backend,
    train_data: Dataset,
    cfg: TrainConfig,
    start_step: int,
    use_segments: bool,
    input_files: list,
    map_input=None,
):
    """The distributed training batches, starting after ``start_step`` global batches."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        plan = plan_for_context(
            dataset=train_data, context=context, global_batch_size=cfg.global_batch_size
        )
        input_files.extend(plan.files)
        dataset = make_dataset(
            plan=plan,
            spec=train_data.record_spec,
            seed=cfg.seed,
            shuffle_buffer=cfg.shuffle_buffer,
            use_segments=use_segments,
            start_batch=start_step * plan.replicas_per_pipeline,
        )
        return map_input(dataset) if map_input else dataset

    return backend.distribute_dataset(dataset_fn)


def _write_exports(model: keras.Model, *, train_data: Dataset, model_dir: str) -> None:
    """``export/model.keras``, then ``export/saved_model/1`` for serving (chief only).

    Synthetic datasets carry bytes that are not a SentencePiece model in place of a tokenizer:
    for them the SavedModel is skipped with a warning.
    """
    log.info("exported %s", checkpoint.export_model(model, model_dir=model_dir))
    # Imported here: only exporting needs tensorflow_text (and its ops) in the process.
    from trainer.export import from_run, saved_model

    try:
        servable = saved_model.Servable(
            model=model,
            tokenizer_proto=from_run.read_tokenizer(train_data),
            eos_id=train_data.tokenizer["special_ids"]["eos"],
        )
    except InputError as err:
        log.warning("%s: no SavedModel exported: %s", train_data.tokenizer_path, err)
        return
    export_dir = storage.join(model_dir, checkpoint.EXPORT_DIR)
    log.info("exported %s", saved_model.write(servable, export_dir=export_dir))


def train(
    *,
    model_config: GPTConfig,
    train_config: TrainConfig,
    backend: Backend,
    train_data: Dataset,
    model_dir: str,
    eval_data: Dataset | None = None,
    map_input=None,
    export: bool = True,
) -> TrainResult:
    """Train (or resume training) ``model_config`` on ``train_data`` until ``train_config.steps``.

    Resumes from the newest checkpoint in ``model_dir`` and continues with exactly the batches
    an uninterrupted run would have read next. The chief writes ``run.json``, checkpoints,
    ``metrics.jsonl``, ``tensorboard/``, ``profile/`` and ``export/model.keras``; every process
    computes. ``map_input`` (tests) transforms each input pipeline's ``tf.data.Dataset``;
    ``export=False`` (benchmarks) skips writing ``export/``.
    """
    cfg = train_config
    telemetry = Telemetry(
        model_dir=model_dir,
        enabled=backend.is_chief,
        profile_steps=cfg.profile_steps,
        sample_every_ms=cfg.sample_system_every_ms,
    )
    saved = run_record.read(model_dir)
    _check_run(
        model_config=model_config,
        train_data=train_data,
        eval_data=eval_data,
        saved=saved,
        model_dir=model_dir,
    )
    with backend.scope():
        model = build_model(model_config)
        optimizer = build_optimizer(cfg, num_replicas=backend.num_replicas)
        optimizer.build(model.trainable_variables)
        examples_seen = tf.Variable(
            0,
            dtype=tf.int64,
            trainable=False,
            name="examples_seen",
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )
    checkpointer = checkpoint.Checkpointer(
        model_dir=model_dir,
        model=model,
        optimizer=optimizer,
        examples_seen=examples_seen,
        keep=cfg.keep_checkpoints,
        is_chief=backend.is_chief,
    )
    start_step = checkpointer.restore_latest()
    backend.broadcast_variables([*model.variables, *optimizer.variables, examples_seen])

    data_split = {
        "train_manifest": train_data.manifest_path,
        "num_pipelines": backend.world_size,
        "global_batch_size": cfg.global_batch_size,
    }
    if saved is not None and saved.data != data_split:
        log.warning(
            "resuming with a different data split (%s, was %s): batches after the "
            "restart differ from an uninterrupted run's",
            data_split,
            saved.data,
        )
    if backend.is_chief:
        log.info("%s; model: %s parameters", backend.describe(), f"{param_count(model_config):,}")
        if saved is None:
            record = run_record.RunRecord(
                model=model_config,
                train=cfg,
                data=data_split,
                tokenizer=compat.tokenizer_identity(train_data),
            )
            run_record.write(record, model_dir=model_dir)

    input_files: list[str] = []
    batches_done = int(examples_seen.numpy()) // cfg.global_batch_size
    iterator = iter(
        _train_input(
            backend=backend,
            train_data=train_data,
            cfg=cfg,
            start_step=batches_done,
            input_files=input_files,
            use_segments=model_config.use_segments,
            map_input=map_input,
        )
    )
    train_step = make_batch_train_step(
        model=model,
        optimizer=optimizer,
        backend=backend,
        clip_norm=cfg.clip_norm,
        xla=cfg.xla,
        pad_id=train_data.tokenizer["special_ids"]["pad"],
    )
    evaluator = None
    if eval_data is not None:
        evaluator = Evaluator(
            model=model,
            backend=backend,
            dataset=eval_data,
            global_batch_size=cfg.global_batch_size,
            max_batches=cfg.eval_batches,
            xla=cfg.xla,
        )

    history, evals = [], []
    tokens_per_step = cfg.global_batch_size * model_config.seq_len
    clock, clock_step = time.perf_counter(), start_step
    for step in telemetry.steps(start_step + 1, cfg.steps):  # closes it however the loop ends
        stats = train_step(*telemetry.next_batch(iterator))
        telemetry.step_done(step, wait_for=stats["loss"])
        examples_seen.assign_add(cfg.global_batch_size)
        last = step == cfg.steps
        if step % cfg.log_every == 0 or last:
            now = time.perf_counter()
            row = {
                "step": step,
                **{k: float(v.numpy()) for k, v in stats.items()},
                "lr": float(optimizer.learning_rate.numpy()),
                "tokens_per_s": tokens_per_step * (step - clock_step) / (now - clock),
            }
            history.append(row)
            if backend.is_chief:
                _append_metrics(model_dir, row)
                timing = telemetry.log_train(step, row)
                log.info(
                    "step %d loss %.4f lr %.2e grad_norm %.3f tokens/s %.0f input wait %.0f%%",
                    step,
                    row["loss"],
                    row["lr"],
                    row["grad_norm"],
                    row["tokens_per_s"],
                    100 * timing["input_wait_fraction"],
                )
            clock, clock_step = now, step
        checkpoint_now = step % cfg.checkpoint_every == 0 or last
        evaluate_now = evaluator is not None and (
            last or (cfg.eval_every > 0 and step % cfg.eval_every == 0)
        )
        if checkpoint_now:
            checkpointer.save(step)
        if evaluate_now:
            result = {"step": step, **{f"eval_{k}": v for k, v in evaluator().items()}}
            evals.append(result)
            if backend.is_chief:
                _append_metrics(model_dir, result)
                telemetry.log_eval(step, result)
                log.info(
                    "step %d eval_loss %.4f eval_perplexity %.2f",
                    step,
                    result["eval_loss"],
                    result["eval_perplexity"],
                )
        if checkpoint_now or evaluate_now:  # tokens/s counts training, not saving or evaluating
            clock, clock_step = time.perf_counter(), step
    if backend.is_chief and export:
        _write_exports(model, train_data=train_data, model_dir=model_dir)
    return TrainResult(
        start_step=start_step,
        final_step=cfg.steps,
        history=history,
        evals=evals,
        input_files=tuple(input_files),
        model=model,
    )
