"""What both training orders share: records per replica, and a batch's model inputs and labels.

``--order=global`` (``trainer.input.global_order``) and ``--order=files`` and evaluation
(``trainer.input.files``) cut the same per-replica batches and feed the model the same way.
"""

from __future__ import annotations

import tensorflow as tf

from common.errors import ConfigError
from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS


def model_inputs(features: dict, *, use_segments: bool) -> tuple:
    """A batch of records' features, each int32 (B, T + 1) -> (inputs, labels), each (B, T).

    Record = T + 1 tokens: inputs are tokens[:-1], labels tokens[1:].
    """
    inputs = {TOKENS: features[TOKENS][:, :-1]}  # (B, T)
    if use_segments:
        inputs[SEGMENT_IDS] = features[SEGMENT_IDS][:, :-1]  # (B, T)
        inputs[POSITIONS] = features[POSITIONS][:, :-1]  # (B, T)
    return inputs, features[TOKENS][:, 1:]  # labels (B, T)


def per_replica_batch(context: tf.distribute.InputContext, *, global_batch_size: int) -> int:
    """Records per replica and step; ConfigError unless the replicas divide the global batch."""
    replicas = context.num_replicas_in_sync
    if global_batch_size % replicas:
        raise ConfigError(
            f"--global_batch_size {global_batch_size} is not divisible by the {replicas} "
            "replicas; use a multiple of it"
        )
    return global_batch_size // replicas
