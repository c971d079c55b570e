"""The training run's typed configuration (everything but the model and the paths)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters and schedules of one training run; saved in ``model_dir/run.json``.

    Attributes:
        steps: optimizer steps to train for (the run ends at this global step).
        global_batch_size: records per step, summed over all replicas.
        learning_rate: peak learning rate (before ``scale_lr``).
        min_lr_ratio: the cosine decay ends at this fraction of the peak.
        warmup_steps: linear warm-up steps.
        weight_decay: AdamW decoupled weight decay (matrices and embeddings only).
        beta_1, beta_2: Adam moments.
        clip_norm: clip the global gradient norm (after all-reduce); 0 disables.
        scale_lr: multiply the learning rate by the number of replicas (Horovod's recipe).
        seed: weights' initialization and data order.
        shuffle_buffer: records in each input pipeline's shuffle buffer.
        log_every: steps between log lines and ``metrics.jsonl`` rows.
        checkpoint_every: steps between checkpoints (and always at the end).
        keep_checkpoints: checkpoints kept on disk.
        eval_every: steps between evaluations (0: only at the end; needs an eval manifest).
        eval_batches: global batches per evaluation (0: the whole eval manifest).
        xla: compile the training step with XLA.
    """

    steps: int
    global_batch_size: int
    learning_rate: float = 6e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta_1: float = 0.9
    beta_2: float = 0.95
    clip_norm: float = 1.0
    scale_lr: bool = False
    seed: int = 0
    shuffle_buffer: int = 10_000
    log_every: int = 10
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    eval_every: int = 0
    eval_batches: int = 0
    xla: bool = False

    def __post_init__(self):
        positive = (
            "steps",
            "global_batch_size",
            "log_every",
            "checkpoint_every",
            "keep_checkpoints",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")
        non_negative = (
            "learning_rate",
            "warmup_steps",
            "weight_decay",
            "clip_norm",
            "shuffle_buffer",
            "eval_every",
            "eval_batches",
        )
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"--{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"--min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
