"""Checkpoints of model, optimizer and data position: written by the chief, read by everyone.

Variables are saved by position (fixed by the model's config, which is saved beside) with
readable names, the optimizer's by position. Keras 3
keeps layer lists in structures ``tf.train.Checkpoint`` does not see, so handing it the model
itself would silently skip every decoder block.
"""

from __future__ import annotations

import logging

import keras
import tensorflow as tf

from common import storage
from common.errors import PilepackError

log = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"


class CheckpointWriteError(PilepackError):
    """A checkpoint could not be written; the previous one is still the latest."""

EXPORT_DIR = "export"
EXPORT_FILE = "model.keras"


def model_variables(model: keras.Model) -> dict:
    """Key -> tf.Variable for every model variable (weights and dropout seed states).

    Keys are the position in ``model.variables`` (fixed by the config) plus a readable name:
    the variable path without the model's name, or for seed states (which Keras names from a
    process-wide counter) just the variable's name.
    """
    prefix = model.name + "/"
    named = {}
    for index, variable in enumerate(model.variables):
        path = variable.path
        readable = path[len(prefix) :] if path.startswith(prefix) else variable.name
        named[f"{index:04d}:{readable.replace('/', '.')}"] = variable.value
    return named


def optimizer_variables(optimizer: keras.optimizers.Optimizer) -> dict:
    return {f"{i:05d}": variable.value for i, variable in enumerate(optimizer.variables)}


class Checkpointer:
    """Keep-N checkpoints in ``model_dir/checkpoints``; the step is ``optimizer.iterations``.

    Args:
        model_dir: the run's directory (shared by all workers, or object storage).
        model, optimizer: built (``optimizer.build``) before this is created.
        examples_seen: int64 variable, records consumed by training (the data position).
        keep: checkpoints to keep.
        is_chief: only the chief writes; every process restores.
    """

    def __init__(
        self,
        *,
        model_dir: str,
        model: keras.Model,
        optimizer,
        examples_seen: tf.Variable,
        keep: int,
        is_chief: bool,
    ):
        self.directory = storage.join(model_dir, CHECKPOINT_DIR)
        self.is_chief = is_chief
        self._optimizer = optimizer
        self._checkpoint = tf.train.Checkpoint(
            model=model_variables(model),
            optimizer=optimizer_variables(optimizer),
            examples_seen=examples_seen,
        )
        self._manager = tf.train.CheckpointManager(
            self._checkpoint, directory=self.directory, max_to_keep=keep
        )

    def restore_latest(self) -> int:
        """Restore the newest checkpoint if there is one; return its step (0 for a new run)."""
        latest = self._manager.latest_checkpoint
        if latest is None:
            return 0
        self._checkpoint.restore(latest).assert_consumed()
        step = int(self._optimizer.iterations.numpy())
        log.info("restored %s (step %d)", latest, step)
        return step

    def save(self, step: int) -> str | None:
        """Write a checkpoint for ``step`` on the chief; other processes write nothing.

        TensorFlow writes a checkpoint's files first and names it in the ``checkpoint`` state
        file last, so a failed save (a full disk, a lost mount) leaves the previous one the
        latest: the error says which, and a rerun resumes from it.
        """
        if not self.is_chief:
            return None
        previous = self._manager.latest_checkpoint
        try:
            return self._manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as err:
            reason = (getattr(err, "message", None) or str(err)).strip().splitlines()[0]
            then = (f"the previous checkpoint {previous} is intact and loadable: free space or "
                    "fix the storage, then rerun the same command to resume from it"
                    if previous else "there is no earlier checkpoint: free space or fix the "
                    "storage, then rerun")
            raise CheckpointWriteError(f"the checkpoint of step {step} could not be written to "
                                       f"{self.directory} ({reason}); {then}") from err


def restore_model(model: keras.Model, *, model_dir: str) -> str:
    """Load the newest checkpoint's model weights into ``model`` (evaluation); return its path."""
    latest = tf.train.latest_checkpoint(storage.join(model_dir, CHECKPOINT_DIR))
    if latest is None:
        raise FileNotFoundError(f"{model_dir}: no checkpoint in {CHECKPOINT_DIR}/ (train first)")
    tf.train.Checkpoint(model=model_variables(model)).restore(latest).expect_partial()
    return latest


def export_model(model: keras.Model, *, model_dir: str) -> str:
    """Save the final model as ``model_dir/export/model.keras`` (chief only, by the caller)."""
    path = storage.join(model_dir, EXPORT_DIR, EXPORT_FILE)
    fs, stripped = storage.filesystem(path)
    fs.makedirs(storage.dirname(stripped), exist_ok=True)
    model.save(path)
    return path
