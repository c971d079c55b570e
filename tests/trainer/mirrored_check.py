"""Two replicas in one process (two logical CPUs) against one replica; run by test_mirrored.py.

    python -m tests.trainer.mirrored_check DATASET_MANIFEST WORK_DIR

Prints one JSON object. Logical devices must be configured before TensorFlow runs its first
op, hence a separate process.
"""

from __future__ import annotations

import json
import os
import sys

import keras
import numpy as np
import tensorflow as tf

from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.model import GPTConfig
from trainer.optim import PreReducedAdamW


def one_update(optimizer_cls, strategy) -> float:
    """Apply a gradient of 1.0 on each replica; with epsilon=1 and no moment averaging Adam's
    step shows the gradient's scale:
    1 / (1 + 1) = 0.5 for the gradient as given, 2 / (2 + 1) for gradients summed again."""
    with strategy.scope():
        variable = keras.Variable(0.0)
        optimizer = optimizer_cls(
            learning_rate=1.0, epsilon=1.0, weight_decay=0.0, beta_1=0.0, beta_2=0.0
        )
        optimizer.build([variable])

    @tf.function
    def step():
        strategy.run(lambda: optimizer.apply([tf.constant(1.0)], [variable]))

    step()
    return float(variable.numpy())


def main(argv: list[str]) -> int:
    tf.config.set_logical_device_configuration(  # before TensorFlow's first op
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
    data = manifest.load(argv[0])
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    out = {
        "prereduced_update": one_update(PreReducedAdamW, mirrored),
        "stock_update": one_update(keras.optimizers.AdamW, mirrored),
    }
    backends = {
        "single": StrategyBackend(
            name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0")
        ),
        "mirrored": StrategyBackend(name="mirrored", strategy=mirrored),
    }
    weights = {}
    for name, backend in backends.items():
        keras.utils.set_random_seed(0)
        result = loop.train(
            model_config=GPTConfig.from_preset(
                "tiny", vocab_size=data.tokenizer["vocab_size"], seq_len=data.seq_len
            ),
            train_config=TrainConfig(
                steps=4, global_batch_size=8, log_every=1, warmup_steps=0, learning_rate=1e-2
            ),
            backend=backend,
            train_data=data,
            model_dir=os.path.join(argv[1], name),
        )
        out[name] = {
            key: [row[key] for row in result.history]
            for key in ("loss", "grad_norm", "tokens", "local_tokens")
        }
        out[name]["replicas"] = backend.num_replicas
        weights[name] = result.model.get_weights()
    out["max_weight_difference"] = max(
        float(np.abs(a - b).max()) for a, b in zip(weights["single"], weights["mirrored"])
    )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
