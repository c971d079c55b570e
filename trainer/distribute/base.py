"""The one abstraction the training loop uses for distribution."""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from common.errors import PilepackError


def dense(grads: Sequence) -> list:
    """Embedding gradients arrive as IndexedSlices with one row per token occurrence: densify
    them, so the all-reduce is one dense sum and the clip norm is the true gradient norm (the
    norm of IndexedSlices counts repeated tokens' rows separately)."""
    return [tf.convert_to_tensor(g) for g in grads]


def tf_variables(variables: Sequence) -> list:
    """Keras 3 variables wrap a tf.Variable; Horovod wants the tf.Variable
    (horovod/horovod#4290)."""
    return [v.value if isinstance(v, keras.Variable) else v for v in variables]


class BackendUnavailable(PilepackError, RuntimeError):
    """A backend's library is missing or cannot run here; the message names the fix."""


def import_backend_library(module: str, *, fix: str):
    """Import a backend's library (``horovod.tensorflow``, ...), or BackendUnavailable(``fix``)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:  # not installed, or built without TensorFlow
        raise BackendUnavailable(f"{fix} (import failed: {err})") from err


class Backend(abc.ABC):
    """Where this process sits in the job, and the collectives the training step needs.

    Every backend runs the step through ``run`` inside a ``tf.distribute`` strategy: the
    tf.distribute backends with their own strategy, Horovod with the default (one-replica)
    strategy, one process per GPU. So the loop has one path.

    Attributes:
        name: the ``--backend`` name.
        strategy: the ``tf.distribute.Strategy`` to create variables under and run steps with.
        rank: index of this process (0 is the chief).
        world_size: number of processes (= input pipelines).
        num_replicas: replicas summing their gradients, across all processes.
    """

    def __init__(self, *, name: str, strategy: tf.distribute.Strategy, rank: int, world_size: int):
        self.name = name
        self.strategy = strategy
        self.rank = rank
        self.world_size = world_size

    @property
    def num_replicas(self) -> int:
        return self.strategy.num_replicas_in_sync

    @property
    def is_chief(self) -> bool:
        """The one process that writes checkpoints, logs, metrics and the exported model."""
        return self.rank == 0

    @property
    @abc.abstractmethod
    def devices(self) -> tuple[str, ...]:
        """The devices this process computes on (logged at start-up: a GPU run can be told
        from one that silently fell back to the CPU)."""

    @abc.abstractmethod
    def distribute_dataset(
        self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
    ):
        """An iterable of per-replica batches; ``dataset_fn`` is called once per process."""

    @abc.abstractmethod
    def all_reduce_sum(self, value: Any) -> Any:
        """Sum a (nest of) tensor(s) over all replicas; call inside ``run``."""

    @abc.abstractmethod
    def gradients(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence) -> list:
        """Dense gradients of ``loss`` summed over all replicas; call inside ``run``."""

    def broadcast_variables(self, variables: Sequence) -> None:
        """Make every process start from the chief's values (no-op where variables are mirrored)."""

    def run(self, fn: Callable, args: tuple = ()) -> Any:
        return self.strategy.run(fn, args=args)

    def first_local(self, value: Any) -> Any:
        """One replica's copy of a value that is identical on every replica."""
        return self.strategy.experimental_local_results(value)[0]

    def scope(self):
        return self.strategy.scope()

    def describe(self) -> str:
        return (
            f"backend={self.name} rank={self.rank}/{self.world_size} "
            f"replicas={self.num_replicas} chief={self.is_chief} devices={','.join(self.devices)}"
        )
