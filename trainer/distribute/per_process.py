"""For Horovod: one process per GPU, collectives from a library."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from trainer.distribute.base import Backend


def pin_gpu(local_rank: int) -> None:
    """Make GPU ``local_rank`` the only one this process sees, growing its memory on demand."""
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:
        tf.config.set_visible_devices(gpus[local_rank % len(gpus)], "GPU")


class PerProcessBackend(Backend):
    """One replica per process under the default strategy; subclasses supply the collectives."""

    def __init__(self, *, name: str, rank: int, world_size: int, local_rank: int):
        pin_gpu(local_rank)
        strategy = tf.distribute.get_strategy()  # the default: one replica, this process's GPU
        super().__init__(name=name, strategy=strategy, rank=rank, world_size=world_size)

    @property
    def num_replicas(self) -> int:
        return self.world_size

    @property
    def devices(self) -> tuple[str, ...]:
        gpus = tf.config.list_logical_devices("GPU")  # pinned: at most one
        return tuple(device.name for device in gpus[:1]) or ("/device:CPU:0",)

    def distribute_dataset(
        self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
    ):
        context = tf.distribute.InputContext(
            num_input_pipelines=self.world_size,
            input_pipeline_id=self.rank,
            num_replicas_in_sync=self.world_size,
        )
        return dataset_fn(context)
