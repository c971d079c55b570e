"""``single``, ``mirrored`` and ``multiworker``: tf.distribute strategies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainer.distribute.base import Backend, dense


class StrategyBackend(Backend):
    """A ``tf.distribute`` strategy: variables mirrored, gradients all-reduced by collectives."""

    def __init__(
        self, *, name: str, strategy: tf.distribute.Strategy, rank: int = 0, world_size: int = 1
    ):
        super().__init__(name=name, strategy=strategy, rank=rank, world_size=world_size)

    def distribute_dataset(
        self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
    ):
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    def all_reduce_sum(self, value: Any) -> Any:
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, value)

    def gradients(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence) -> list:
        return self.all_reduce_sum(dense(tape.gradient(loss, variables)))


def single() -> StrategyBackend:
    """One device: the first GPU if there is one, else the CPU."""
    device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    return StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy(device))


def mirrored() -> StrategyBackend:
    """Every local GPU (or the CPU), one process."""
    return StrategyBackend(name="mirrored", strategy=tf.distribute.MirroredStrategy())


def multiworker(*, cluster: dict) -> StrategyBackend:
    """``MultiWorkerMirroredStrategy`` over ``cluster`` (a parsed TF_CONFIG).

    Create it before any other TensorFlow work in the process. Every worker must start: a lone
    worker blocks in the first collective until its peers join.
    """
    task = cluster["task"]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster["cluster"]),
        task_type=task["type"],
        task_id=int(task["index"]),
        rpc_layer="grpc",
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    workers = sum(len(cluster["cluster"].get(kind, [])) for kind in ("chief", "worker"))
    rank = int(task["index"]) + (
        1 if task["type"] == "worker" and "chief" in cluster["cluster"] else 0
    )
    return StrategyBackend(name="multiworker", strategy=strategy, rank=rank, world_size=workers)
