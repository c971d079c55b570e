"""Horovod's recipe through the one Backend path, with a stand-in for ``horovod.tensorflow``.

Horovod is not installed here (it does not build against TensorFlow 2.21 unpatched), so a fake
module records what the trainer asks of it; with one process its collectives are identities.
"""

import keras
import numpy as np
import tensorflow as tf

from datagen.datasets import learnable_dataset
from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute.horovod import HorovodBackend
from trainer.model import GPTConfig


class FakeHorovod:
    Sum = "Sum"

    def __init__(self):
        self.calls = []

    def init(self):
        self.calls.append("init")

    def rank(self):
        return 0

    def size(self):
        return 1

    def local_rank(self):
        return 0

    def allreduce(self, tensor, op):
        self.calls.append(("allreduce", op))
        return tensor

    def broadcast_variables(self, variables, root_rank):
        self.calls.append(
            ("broadcast", root_rank, all(isinstance(v, tf.Variable) for v in variables))
        )

    def DistributedGradientTape(self, tape, op, sparse_as_dense):
        calls = self.calls

        class Tape:
            def gradient(self, loss, sources):
                calls.append(
                    ("tape", op, sparse_as_dense, all(isinstance(v, tf.Variable) for v in sources))
                )
                return tape.gradient(loss, sources)

        return Tape()


def test_the_recipe_runs_in_order_with_tf_variables(tmp_path):
    hvd = FakeHorovod()
    backend = HorovodBackend(hvd=hvd)
    keras.utils.set_random_seed(0)
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    result = loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train_config=TrainConfig(steps=3, global_batch_size=4, log_every=1, warmup_steps=0),
        backend=backend,
        train_data=data,
        model_dir=str(tmp_path / "run"),
    )
    assert hvd.calls[0] == "init"
    assert hvd.calls[1] == ("broadcast", 0, True)  # from rank 0, tf.Variables (horovod#4290)
    assert ("tape", "Sum", True, True) in hvd.calls  # DistributedGradientTape with tf.Variables
    assert ("allreduce", "Sum") in hvd.calls  # the global token count
    assert hvd.calls.index(("broadcast", 0, True)) < hvd.calls.index(("tape", "Sum", True, True))
    assert [row["step"] for row in result.history] == [1, 2, 3]
    assert np.isfinite(result.history[-1]["loss"])
    assert (tmp_path / "run" / "checkpoints" / "checkpoint").exists()  # rank 0 checkpoints
