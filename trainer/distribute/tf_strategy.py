"""``single``, ``mirrored`` and ``multiworker``: tf.distribute strategies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainer.distribute.base import Backend, dense

Implementation = tf.distribute.experimental.CommunicationImplementation


class StrategyBackend(Backend):
    """A ``tf.distribute`` strategy: variables mirrored, gradients all-reduced by collectives."""

    def __init__(
        self, *, name: str, strategy: tf.distribute.Strategy, rank: int = 0, world_size: int = 1
    ):
        super().__init__(name=name, strategy=strategy, rank=rank, world_size=world_size)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(self.strategy.extended.worker_devices)

    def distribute_dataset(
        self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
    ):
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    def all_reduce_sum(self, value: Any) -> Any:
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, value)

    def gradients(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence) -> list:
        return self.all_reduce_sum(dense(tape.gradient(loss, variables)))


def local_gpu_count() -> int:
    """GPUs this process can see (physical devices: does not start the TensorFlow runtime,
    which MultiWorkerMirroredStrategy must configure first)."""
    return len(tf.config.list_physical_devices("GPU"))


def single() -> StrategyBackend:
    """One device: the first GPU if there is one, else the CPU."""
    device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    return StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy(device))


def mirrored() -> StrategyBackend:
    """Every local GPU (or the CPU), one process."""
    return StrategyBackend(name="mirrored", strategy=tf.distribute.MirroredStrategy())


def cluster_resolver(
    cluster: dict, *, num_gpus: int
) -> tf.distribute.cluster_resolver.SimpleClusterResolver:
    """The resolver for ``cluster`` (a parsed TF_CONFIG) with this worker's ``num_gpus``.

    MultiWorkerMirroredStrategy takes the number of local devices from
    ``num_accelerators()`` for every resolver but TF's own TFConfigClusterResolver: without
    it each worker would train on one CPU device however many GPUs it has.
    """
    task = cluster["task"]
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster["cluster"]),
        task_type=task["type"],
        task_id=int(task["index"]),
        num_accelerators={"GPU": num_gpus} if num_gpus else None,
        rpc_layer="grpc",
    )


def communication_options(*, num_gpus: int) -> tf.distribute.experimental.CommunicationOptions:
    """NCCL collectives between GPUs; on CPUs TensorFlow's choice (ring, the only one there)."""
    implementation = Implementation.NCCL if num_gpus else Implementation.AUTO
    return tf.distribute.experimental.CommunicationOptions(implementation=implementation)


def multiworker(*, cluster: dict, num_gpus: int | None = None) -> StrategyBackend:
    """``MultiWorkerMirroredStrategy`` over ``cluster`` (a parsed TF_CONFIG), one replica per
    local GPU (``num_gpus``; None: count them), else one CPU replica per worker.

    Create it before any other TensorFlow work in the process. Every worker must start: a lone
    worker blocks in the first collective until its peers join.
    """
    if num_gpus is None:
        num_gpus = local_gpu_count()
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=cluster_resolver(cluster, num_gpus=num_gpus),
        communication_options=communication_options(num_gpus=num_gpus),
    )
    task = cluster["task"]
    workers = sum(len(cluster["cluster"].get(kind, [])) for kind in ("chief", "worker"))
    rank = int(task["index"]) + (
        1 if task["type"] == "worker" and "chief" in cluster["cluster"] else 0
    )
    return StrategyBackend(name="multiworker", strategy=strategy, rank=rank, world_size=workers)
