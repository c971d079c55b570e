"""``smddp``: SageMaker's ``smdistributed.dataparallel.tensorflow``, Horovod's six steps.

Fact: AWS ships the library only inside its SageMaker TensorFlow training containers and
discontinued it for TensorFlow after 2.11 (last: ``tensorflow-training:2.11.0-gpu-py39-cu112-
ubuntu20.04-sagemaker``), which predate Keras 3 and so cannot run this trainer. The backend is
written against the library's documented API for a container that has both; everywhere else
use ``--backend=multiworker`` (TF_CONFIG is built from SageMaker's SM_HOSTS).

smdistributed averages where Horovod can sum: ``gradients`` and ``all_reduce_sum`` multiply
the average by the world size, so the loop sees the same sums from every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from trainer.distribute.base import dense, import_backend_library, tf_variables
from trainer.distribute.per_process import PerProcessBackend

FIX = (
    "--backend=smddp needs smdistributed.dataparallel, which exists only inside SageMaker's "
    "TensorFlow training containers (discontinued after TensorFlow 2.11, which predates the "
    "Keras 3 this trainer needs). Use --backend=multiworker (on SageMaker TF_CONFIG is built "
    "from SM_HOSTS / SM_CURRENT_HOST) or --backend=horovod."
)


def import_smddp():
    """``smdistributed.dataparallel.tensorflow``, or BackendUnavailable naming the fix."""
    return import_backend_library("smdistributed.dataparallel.tensorflow", fix=FIX)


class SmddpBackend(PerProcessBackend):
    def __init__(self, *, sdp):
        sdp.init()
        self._sdp = sdp
        super().__init__(
            name="smddp", rank=sdp.rank(), world_size=sdp.size(), local_rank=sdp.local_rank()
        )

    def all_reduce_sum(self, value: Any) -> Any:
        size = float(self.world_size)
        # oob_allreduce: the library's all-reduce for tensors that are not gradients.
        return tf.nest.map_structure(lambda t: self._sdp.oob_allreduce(t) * size, value)

    def gradients(self, tape: tf.GradientTape, loss: tf.Tensor, variables: Sequence) -> list:
        averaged = self._sdp.DistributedGradientTape(tape).gradient(loss, tf_variables(variables))
        return [g * float(self.world_size) for g in dense(averaged)]

    def broadcast_variables(self, variables: Sequence) -> None:
        self._sdp.broadcast_variables(tf_variables(variables), root_rank=0)
