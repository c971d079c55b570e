"""AdamW with linear warm-up and cosine decay; clipping happens in the loop, after all-reduce."""

from __future__ import annotations

import keras

from trainer.config import TrainConfig

NO_DECAY = [
    "bias",
    "gamma",
    "beta",
]  # LayerNorm and bias vectors (GPT-2/nanoGPT decay matrices only)


class PreReducedAdamW(keras.optimizers.AdamW):
    """AdamW whose gradients arrive already summed over replicas.

    Keras 3 sums gradients across tf.distribute replicas inside ``apply`` (after its own
    clipping, so a global clip norm would see one replica's gradient). The loop all-reduces
    through the Backend instead (one path for tf.distribute, Horovod and smdistributed) and
    clips the global gradient, so the reduction here must not happen a second time.
    """

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return grads_and_vars


def learning_rate_schedule(
    config: TrainConfig, *, num_replicas: int
) -> keras.optimizers.schedules.LearningRateSchedule:
    """Warm-up from peak/warmup to peak, then cosine decay to ``min_lr_ratio * peak``.

    The peak is ``learning_rate``, times the number of replicas with ``scale_lr`` (Horovod's
    recipe for a global batch that grows with the workers).
    """
    peak = config.learning_rate * (num_replicas if config.scale_lr else 1)
    warmup = min(config.warmup_steps, config.steps)
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=peak / warmup if warmup else peak,
        decay_steps=max(config.steps - warmup, 1),
        alpha=config.min_lr_ratio,
        warmup_target=peak if warmup else None,
        warmup_steps=warmup,
    )


def build_optimizer(config: TrainConfig, *, num_replicas: int) -> PreReducedAdamW:
    """The optimizer for ``config``; create it inside the backend's scope."""
    optimizer = PreReducedAdamW(
        learning_rate=learning_rate_schedule(config, num_replicas=num_replicas),
        weight_decay=config.weight_decay,
        beta_1=config.beta_1,
        beta_2=config.beta_2,
        epsilon=1e-8,
    )
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY)
    return optimizer
