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
from trainer.distribute.base import Backend
from trainer.evaluate import Evaluator
from trainer.input.train_input import log_order_reads, settle_order, train_input
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
    run = _Run(
        model_config=model_config,
        cfg=train_config,
        backend=backend,
        train_data=train_data,
        model_dir=model_dir,
        eval_data=eval_data,
        map_input=map_input,
    )
    run.steps()
    return run.end(export=export)


class _Run:
    """One call of ``train`` in three phases: the constructor sets up (refuses a mismatched
    ``model_dir`` or dataset, builds or restores the model, opens the input), ``steps`` trains,
    ``end`` exports and reports. Only the chief writes files: each write is gated on
    ``backend.is_chief`` where it is made, or the checkpointer and telemetry are told so.
    """

    def __init__(
        self,
        *,
        model_config: GPTConfig,
        cfg: TrainConfig,
        backend: Backend,
        train_data: Dataset,
        model_dir: str,
        eval_data: Dataset | None,
        map_input,
    ):
        self.model_config, self.cfg, self.backend = model_config, cfg, backend
        self.train_data, self.model_dir = train_data, model_dir
        self.history: list[dict] = []  # one row per logged step
        self.evals: list[dict] = []  # one row per evaluation
        self.telemetry = Telemetry(  # first: validates --profile_steps on every rank
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
        self._build_and_restore()
        self._record_run(saved)
        self._prepare_steps(eval_data=eval_data, map_input=map_input)

    def _build_and_restore(self) -> None:
        """The model, optimizer and ``examples_seen``, restored from the newest checkpoint (or
        fresh: ``start_step`` 0), every process holding the chief's values."""
        with self.backend.scope():
            self.model = build_model(self.model_config)
            self.optimizer = build_optimizer(self.cfg, num_replicas=self.backend.num_replicas)
            self.optimizer.build(self.model.trainable_variables)
            self.examples_seen = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="examples_seen",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
        self.checkpointer = checkpoint.Checkpointer(
            model_dir=self.model_dir,
            model=self.model,
            optimizer=self.optimizer,
            examples_seen=self.examples_seen,
            keep=self.cfg.keep_checkpoints,
            is_chief=self.backend.is_chief,
        )
        self.start_step = self.checkpointer.restore_latest()
        self.backend.broadcast_variables(
            [*self.model.variables, *self.optimizer.variables, self.examples_seen]
        )

    def _record_run(self, saved: run_record.RunRecord | None) -> None:
        """Settle the data order (``settle_order``: a resumed run says how it continues); the
        chief writes ``run.json`` for a new run, and rewrites its data section when a resumed
        run changed the order."""
        backend = self.backend
        self.cfg, data = settle_order(
            cfg=self.cfg,
            train_data=self.train_data,
            saved=saved.data if saved else None,
            num_pipelines=backend.world_size,
            examples_seen=int(self.examples_seen.numpy()),
        )
        if backend.is_chief:
            log_order_reads(cfg=self.cfg, train_data=self.train_data,
                            pipelines=backend.world_size)
            parameters = f"{param_count(self.model_config):,}"
            log.info("%s; model: %s parameters", backend.describe(), parameters)
            if saved is None:
                record = run_record.RunRecord(
                    model=self.model_config,
                    train=self.cfg,
                    data=data,
                    tokenizer=compat.tokenizer_identity(self.train_data),
                )
                run_record.write(record, model_dir=self.model_dir)
            elif data != saved.data:
                # its checkpoints from here on are positions in this order: a later resume
                # must continue it, not the order of the run that wrote run.json
                run_record.write(dataclasses.replace(saved, data=data), model_dir=self.model_dir)

    def _prepare_steps(self, *, eval_data: Dataset | None, map_input) -> None:
        """The input iterator (resuming after the batches already trained on), the train step
        and the evaluator (None without ``eval_data``)."""
        cfg = self.cfg
        self.input_files: list[str] = []
        self.iterator = iter(
            train_input(
                backend=self.backend,
                train_data=self.train_data,
                cfg=cfg,
                examples_seen=int(self.examples_seen.numpy()),
                input_files=self.input_files,
                use_segments=self.model_config.use_segments,
                map_input=map_input,
            )
        )
        self.train_step = make_batch_train_step(
            model=self.model,
            optimizer=self.optimizer,
            backend=self.backend,
            clip_norm=cfg.clip_norm,
            xla=cfg.xla,
            pad_id=self.train_data.tokenizer["special_ids"]["pad"],
        )
        self.evaluator = None
        if eval_data is not None:
            self.evaluator = Evaluator(
                model=self.model,
                backend=self.backend,
                dataset=eval_data,
                global_batch_size=cfg.global_batch_size,
                max_batches=cfg.eval_batches,
                xla=cfg.xla,
            )

    def steps(self) -> None:
        """Train from the step after ``start_step`` to ``cfg.steps``; log, checkpoint and
        evaluate on their schedules."""
        cfg, telemetry = self.cfg, self.telemetry
        tokens_per_step = cfg.global_batch_size * self.model_config.seq_len
        clock, clock_step = time.perf_counter(), self.start_step
        # telemetry.steps closes the telemetry however the loop ends.
        for step in telemetry.steps(self.start_step + 1, cfg.steps):
            stats = self.train_step(*telemetry.next_batch(self.iterator))
            telemetry.step_done(step, wait_for=stats["loss"])
            self.examples_seen.assign_add(cfg.global_batch_size)
            last = step == cfg.steps
            if step % cfg.log_every == 0 or last:
                now = time.perf_counter()
                tokens_per_s = tokens_per_step * (step - clock_step) / (now - clock)
                self._log_train(step, stats=stats, tokens_per_s=tokens_per_s)
                clock, clock_step = now, step
            checkpoint_now = step % cfg.checkpoint_every == 0 or last
            evaluate_now = self.evaluator is not None and (
                last or (cfg.eval_every > 0 and step % cfg.eval_every == 0)
            )
            if checkpoint_now:
                self.checkpointer.save(step)
            if evaluate_now:
                self._evaluate(step)
            if checkpoint_now or evaluate_now:  # tokens/s counts training, not saving or evaluating
                clock, clock_step = time.perf_counter(), step

    def _log_train(self, step: int, *, stats: dict, tokens_per_s: float) -> None:
        """Append the step's row to ``history``; the chief also writes and logs it."""
        row = {
            "step": step,
            **{k: float(v.numpy()) for k, v in stats.items()},
            "lr": float(self.optimizer.learning_rate.numpy()),
            "tokens_per_s": tokens_per_s,
        }
        self.history.append(row)
        if self.backend.is_chief:
            _append_metrics(self.model_dir, row)
            timing = self.telemetry.log_train(step, row)
            log.info(
                "step %d loss %.4f lr %.2e grad_norm %.3f tokens/s %.0f input wait %.0f%%",
                step,
                row["loss"],
                row["lr"],
                row["grad_norm"],
                row["tokens_per_s"],
                100 * timing["input_wait_fraction"],
            )

    def _evaluate(self, step: int) -> None:
        """Evaluate (every process) and append to ``evals``; the chief also writes and logs it."""
        result = {"step": step, **{f"eval_{k}": v for k, v in self.evaluator().items()}}
        self.evals.append(result)
        if self.backend.is_chief:
            _append_metrics(self.model_dir, result)
            self.telemetry.log_eval(step, result)
            log.info(
                "step %d eval_loss %.4f eval_perplexity %.2f",
                step,
                result["eval_loss"],
                result["eval_perplexity"],
            )

    def end(self, *, export: bool) -> TrainResult:
        """The chief exports the trained model (unless ``export`` is False); the result."""
        if self.backend.is_chief and export:
            _write_exports(self.model, train_data=self.train_data, model_dir=self.model_dir)
        return TrainResult(
            start_step=self.start_step,
            final_step=self.cfg.steps,
            history=self.history,
            evals=self.evals,
            input_files=tuple(self.input_files),
            model=self.model,
        )
