"""One worker of the two-process MultiWorkerMirroredStrategy test (run by test_multiworker.py).

    TF_CONFIG=... python -m tests.trainer.multiworker_worker MANIFEST MODEL_DIR OUT_JSON STEPS \
        [TRAIN_CONFIG_JSON [SECONDS_PER_BATCH]]

Trains through the same library calls as ``trainer.train`` and writes what this worker saw:
its rank, the shards it read, per-step local and global token counts, losses, and a digest of
its final weights. TRAIN_CONFIG_JSON overrides ``TrainConfig`` fields; SECONDS_PER_BATCH slows
the input down (each batch waits that long), so that a test can kill the run mid-way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time

import keras
import numpy as np


def main(argv: list[str]) -> int:
    manifest_path, model_dir, out_path, steps = argv[0], argv[1], argv[2], int(argv[3])
    overrides = json.loads(argv[4]) if len(argv) > 4 else {}
    delay = float(argv[5]) if len(argv) > 5 else 0.0
    import tensorflow as tf

    from schemas import manifest
    from trainer import loop
    from trainer.config import TrainConfig
    from trainer.distribute import cluster_from_env, make_backend
    from trainer.model import GPTConfig

    backend = make_backend("multiworker", cluster=cluster_from_env(dict(os.environ)))
    logging.basicConfig(level=logging.INFO if backend.is_chief else logging.WARNING)
    keras.utils.set_random_seed(1234 + backend.rank)  # different on purpose: the strategy must sync
    data = manifest.load(manifest_path)
    model_config = GPTConfig.from_preset(
        "tiny", vocab_size=data.tokenizer["vocab_size"], seq_len=data.seq_len
    )
    train_config = TrainConfig(
        **{
            "steps": steps,
            "global_batch_size": 8,
            "warmup_steps": 2,
            "learning_rate": 1e-3,
            "log_every": 1,
            "checkpoint_every": steps,
            **overrides,
        }
    )

    def slow(dataset):
        def wait(inputs, labels):
            waited = tf.numpy_function(lambda: time.sleep(delay) or np.int32(0), [], tf.int32)
            with tf.control_dependencies([waited]):
                return tf.nest.map_structure(tf.identity, (inputs, labels))

        return dataset.map(wait)

    result = loop.train(
        model_config=model_config,
        train_config=train_config,
        backend=backend,
        train_data=data,
        model_dir=model_dir,
        map_input=slow if delay else None,
    )
    digest = hashlib.sha256()
    for weight in result.model.get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    with open(out_path, "w") as handle:
        json.dump(
            {
                "rank": backend.rank,
                "world_size": backend.world_size,
                "num_replicas": backend.num_replicas,
                "is_chief": backend.is_chief,
                "input_files": list(result.input_files),
                "history": result.history,
                "weights_sha256": digest.hexdigest(),
            },
            handle,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
