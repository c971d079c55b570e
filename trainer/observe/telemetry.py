"""What the training loop reports about itself, on the chief: TensorBoard scalars, each step's
time split into waiting for input and computing, system metrics, and ``tf.profiler`` traces.

    telemetry = Telemetry(model_dir=..., enabled=backend.is_chief, profile_steps="20,25")
    for step in telemetry.steps(first, last):      # stops sampler and trace however it ends
        inputs, labels = telemetry.next_batch(iterator)  # timed: waiting for input
        stats = train_step(inputs, labels)
        telemetry.step_done(step, wait_for=stats["loss"])  # timed: computing

Under ``MODEL_DIR``: ``tensorboard/`` (the scalars of ``SCALARS``; traces in
``tensorboard/plugins/profile/``, TensorBoard's profile tab), ``profile/steps.jsonl`` (one row
per step: ``step``, ``time`` (Unix seconds at its start), ``input_s``, ``compute_s``, ``n``
(index of the step in this process: the first ones compile)) and ``profile/system.jsonl``
(``sampler``). ``step_done`` waits for the step to finish on the device (it reads one scalar):
without that, a GPU step would look as long as launching it, and its device time would be
counted as the next step's input wait. The profile files are written locally; under a remote
``MODEL_DIR`` (``gs://``) they are written to a local directory and copied there at the end.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from common import storage
from common.errors import ConfigError
from trainer.observe.jsonl import PROFILE_DIR, STEPS_FILE, SYSTEM_FILE, JsonLinesWriter
from trainer.observe.sampler import SystemSampler

log = logging.getLogger(__name__)

TENSORBOARD_DIR = "tensorboard"  # under --model_dir
# TensorBoard tag -> what it plots; the training loop's rows use the names after the slash.
SCALARS = {
    "train/loss": "mean cross-entropy per real token of the logged step",
    "train/learning_rate": "the scheduled learning rate",
    "train/grad_norm": "global gradient norm before clipping",
    "train/tokens_per_s": "input positions trained per second since the previous log line",
    "train/step_time_s": "mean time per step (input wait + compute) since the previous log line",
    "train/input_wait_fraction": "share of that time spent waiting for the next batch",
    "eval/loss": "mean cross-entropy per real token on the eval manifest",
    "eval/perplexity": "exp(eval/loss)",
}


# What ``tf.summary.scalar`` writes, which in TensorFlow 2.21 needs the ``tensorboard`` package:
# a float32 scalar tagged for TensorBoard's scalars plugin. Training does not need TensorBoard.
_SCALAR = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


def parse_profile_steps(text: str) -> tuple[int, int] | None:
    """``"A,B"`` -> (A, B), the first and last global step to trace; "" -> None."""
    if not text.strip():
        return None
    parts = text.split(",")
    try:
        first, last = (int(part) for part in parts)
    except ValueError:
        first = last = 0
    if len(parts) != 2 or not 1 <= first <= last:
        raise ConfigError(
            f"--profile_steps={text!r}: expected A,B with 1 <= A <= B (global steps to trace, "
            "e.g. --profile_steps=20,25)"
        )
    return first, last


def _profile_dirs(model_dir: str) -> tuple[str, str | None]:
    """(local directory to write, remote directory to copy it to at the end or None)."""
    if "://" not in model_dir or model_dir.startswith("file://"):
        return os.path.join(model_dir.removeprefix("file://"), PROFILE_DIR), None
    return tempfile.mkdtemp(prefix="pilepack-profile-"), storage.join(model_dir, PROFILE_DIR)


class Telemetry:
    """The loop's reporting; with ``enabled=False`` (not the chief) it only hands out batches."""

    def __init__(
        self,
        *,
        model_dir: str,
        enabled: bool,
        profile_steps: str = "",
        sample_every_ms: int = 500,
    ):
        self._trace_range = parse_profile_steps(profile_steps)  # validated on every rank
        if sample_every_ms < 0:
            raise ConfigError(f"--sample_system_every_ms must be >= 0, got {sample_every_ms}")
        self._model_dir = model_dir
        self._enabled = enabled
        self._sample_every_ms = sample_every_ms
        self._writer = self._steps = self._sampler = self._remote = None
        self._tracing = self._step_trace = None
        self._steps_in_process = 0
        self._since_log = [0.0, 0.0, 0]  # input s, total s, steps since the last log row
        self._started = self._input_ready = self._start_time = 0.0

    def steps(self, first: int, last: int):
        """Yield ``first``..``last``; open the outputs first and close them when the loop ends,
        normally or by an exception."""
        self._open()
        try:
            for step in range(first, last + 1):
                self._begin_step(step)
                yield step
        finally:
            self.close()

    def _open(self) -> None:
        if not self._enabled:
            return
        self._writer = tf.summary.create_file_writer(
            storage.join(self._model_dir, TENSORBOARD_DIR)
        )
        local, self._remote = _profile_dirs(self._model_dir)
        self._steps = JsonLinesWriter(os.path.join(local, STEPS_FILE))
        if self._sample_every_ms:
            self._sampler = SystemSampler(
                path=os.path.join(local, SYSTEM_FILE), interval_s=self._sample_every_ms / 1000
            ).start()

    def next_batch(self, iterator):
        """``next(iterator)``, timed as this step's input wait."""
        if not self._enabled:
            return next(iterator)
        self._started = time.perf_counter()
        self._start_time = time.time()
        batch = next(iterator)
        self._input_ready = time.perf_counter()
        return batch

    def step_done(self, step: int, *, wait_for: tf.Tensor) -> None:
        """Wait for the step's result, record its input wait and compute time."""
        if not self._enabled:
            return
        wait_for.numpy()  # the step has finished on the device
        done = time.perf_counter()
        input_s, compute_s = self._input_ready - self._started, done - self._input_ready
        self._steps.write({
            "step": step,
            "time": self._start_time,
            "input_s": input_s,
            "compute_s": compute_s,
            "n": self._steps_in_process,
        })
        self._steps_in_process += 1
        self._since_log[0] += input_s
        self._since_log[1] += input_s + compute_s
        self._since_log[2] += 1
        self._end_step(step)

    def _begin_step(self, step: int) -> None:
        """Start the profiler at the first traced step; mark traced steps for its viewer."""
        if not self._enabled or self._trace_range is None:
            return
        first, last = self._trace_range
        if self._tracing is None and first <= step <= last:
            try:
                tf.profiler.experimental.start(storage.join(self._model_dir, TENSORBOARD_DIR))
            except tf.errors.OpError as err:  # another profiler is running: train without
                log.warning("--profile_steps: the profiler did not start: %s", err)
                self._tracing = False
                return
            self._tracing = True
            log.info("tracing steps %d-%d for TensorBoard's profile tab", step, last)
        if self._tracing:
            self._step_trace = tf.profiler.experimental.Trace("train", step_num=step, _r=1)
            self._step_trace.__enter__()

    def _end_step(self, step: int) -> None:
        if self._step_trace is not None:
            self._step_trace.__exit__(None, None, None)
            self._step_trace = None
        if self._tracing and step >= self._trace_range[1]:
            self._stop_trace()

    def _stop_trace(self) -> None:
        if self._step_trace is not None:  # the loop ended inside a traced step
            self._step_trace.__exit__(None, None, None)
            self._step_trace = None
        tf.profiler.experimental.stop()
        self._tracing = False
        log.info("wrote a profile to %s", storage.join(self._model_dir, TENSORBOARD_DIR))

    def log_train(self, step: int, row: dict) -> dict:
        """Write the train scalars of a log row; return the timing since the previous one."""
        input_s, total_s, count = self._since_log
        self._since_log = [0.0, 0.0, 0]
        timing = {
            "step_time_s": total_s / max(count, 1),
            "input_wait_fraction": input_s / total_s if total_s > 0 else 0.0,
        }
        values = {"lr": "learning_rate"}
        self._scalars(step, "train", {values.get(k, k): v for k, v in {**row, **timing}.items()})
        return timing

    def log_eval(self, step: int, result: dict) -> None:
        """Write ``eval_loss`` and ``eval_perplexity`` of an evaluation row."""
        scalars = {k.removeprefix("eval_"): v for k, v in result.items() if k.startswith("eval_")}
        self._scalars(step, "eval", scalars)

    def _scalars(self, step: int, group: str, values: dict) -> None:
        if self._writer is None:
            return
        with self._writer.as_default(step=step):
            for name, value in values.items():
                if f"{group}/{name}" in SCALARS:
                    tf.summary.write(
                        f"{group}/{name}", tf.constant(value, tf.float32), metadata=_SCALAR
                    )
        self._writer.flush()  # a killed run keeps every logged row

    def close(self) -> None:
        """Stop the trace and the sampler, close the files (safe to call twice)."""
        if self._tracing:
            self._stop_trace()
        if self._sampler is not None:
            self._sampler.stop()
            log.info(
                "system sampler: %.2f s of CPU time, every %d ms",
                self._sampler.cpu_seconds,
                self._sample_every_ms,
            )
            self._sampler = None
        if self._steps is not None:
            self._steps.close()
            if self._remote is not None:
                self._copy_to_remote(os.path.dirname(self._steps.path))
            self._steps = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _copy_to_remote(self, local: str) -> None:
        tf.io.gfile.makedirs(self._remote)
        for name in sorted(os.listdir(local)):
            tf.io.gfile.copy(
                os.path.join(local, name), storage.join(self._remote, name), overwrite=True
            )
        shutil.rmtree(local, ignore_errors=True)
        log.info("copied the profile to %s", self._remote)
