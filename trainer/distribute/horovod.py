"""``horovod``: the original recipe, with the facts of TensorFlow 2.21 / Keras 3 handled.

The six steps and where they happen: (1) ``hvd.init()`` and (2) one GPU per local rank, here;
(3) learning rate times the number of workers, ``--scale_lr`` in ``trainer.optim``; (4)
``DistributedGradientTape``, ``gradients`` below; (5) broadcast from rank 0, ``broadcast_variables``
below, called by the loop once the optimizer is built and a checkpoint restored (the recipe does
it "after the first step" only because Keras 2 created optimizer slots lazily); (6) checkpoints
on rank 0 only, ``Backend.is_chief``.

Facts: Horovod 0.28.1 (its last release) does not compile against TensorFlow >= 2.16 without the
one-line include patch of horovod/horovod#4302, and with Keras 3 it must be handed the
underlying ``tf.Variable`` (``v.value``), not Keras variables (horovod/horovod#4290).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainer.distribute.base import dense, import_backend_library, tf_variables
from trainer.distribute.per_process import PerProcessBackend

FIX = (
    "--backend=horovod needs Horovod built with TensorFlow support. Install it with "
    "HOROVOD_WITH_TENSORFLOW=1 pip install --no-build-isolation 'pilepack[horovod]' "
    "(horovod==0.28.1; for TensorFlow >= 2.16 apply the one-line include patch of "
    "horovod/horovod#4302 first) and launch with horovodrun or mpirun; or use "
    "--backend=multiworker, which needs nothing beyond TensorFlow."
)


def import_horovod():
    """``horovod.tensorflow``, or BackendUnavailable naming the fix."""
    return import_backend_library("horovod.tensorflow", fix=FIX)


class HorovodBackend(PerProcessBackend):
    def __init__(self, *, hvd):
        hvd.init()
        self._hvd = hvd
        super().__init__(
            name="horovod", rank=hvd.rank(), world_size=hvd.size(), local_rank=hvd.local_rank()
        )

    def all_reduce_sum(self, value: Any) -> Any:
        return tf.nest.map_structure(lambda t: self._hvd.allreduce(t, op=self._hvd.Sum), value)

    def gradients(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence) -> list:
        tape = self._hvd.DistributedGradientTape(tape, op=self._hvd.Sum, sparse_as_dense=True)
        return dense(tape.gradient(loss, tf_variables(variables)))

    def broadcast_variables(self, variables: Sequence) -> None:
        self._hvd.broadcast_variables(tf_variables(variables), root_rank=0)
