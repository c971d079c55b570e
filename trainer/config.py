"""The trainer's typed options; every field is also a command-line flag (``common.flags``).

``TrainConfig`` (hyper-parameters and schedules) is saved in ``model_dir/run.json``;
``ModelOptions`` chooses the architecture (the data sets vocabulary and context length);
``DistributionOptions`` chooses the backend. A default is written once, here: ``--help`` of
``python -m trainer.train`` and ``python -m trainer.evaluate`` lists what these say.
"""

from __future__ import annotations

import dataclasses

from common.flags import check_choices, flag, require
from trainer.distribute.resolve import BACKENDS, SAGEMAKER_PORT
from trainer.model.config import PRESETS, GPTConfig

ORDERS = ("global", "files")  # --order; global is the default
# --order_block and --order_window when left at 0, by how the split was written
BLOCK, WINDOW = 32, 64  # input order: a batch mixes 64 random places of the split
SHUFFLED_BLOCK, SHUFFLED_WINDOW = 64, 1  # --shuffle=global: a block is a random sample already


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters and schedules of one training run (each field's help says what it is).

    ``clip_norm`` clips the global gradient after the all-reduce; ``eval_every`` and
    ``eval_batches`` matter only with an eval manifest.
    """

    steps: int = flag(help="train until this global step")
    global_batch_size: int = flag(help="records per step over all replicas")
    learning_rate: float = flag(6e-4, help="peak learning rate")
    min_lr_ratio: float = flag(0.1, help="final LR as a fraction of the peak")
    warmup_steps: int = flag(100, help="linear warm-up steps")
    weight_decay: float = flag(0.1, help="AdamW weight decay")
    beta_1: float = flag(0.9, help="Adam's first-moment decay")
    beta_2: float = flag(0.95, help="Adam's second-moment decay")
    clip_norm: float = flag(1.0, help="global gradient-norm clip (0: off)")
    scale_lr: bool = flag(
        False, help="multiply the learning rate by the number of replicas (Horovod's recipe)"
    )
    seed: int = flag(0, help="initialization and data order")
    order: str = flag(
        "global",
        help="global: step s reads records [s*B, (s+1)*B) of a seeded permutation of all "
        "records (one per epoch), the same on any number of ranks, so a run resumes on another "
        "world size; files: each rank reads its own shards (--shuffle_buffer)",
        choices=ORDERS,
    )
    order_block: int = flag(
        0,
        help="--order=global: blocks of this many neighbouring records, each read with one "
        "request from an object store (0: the default for the split: "
        f"{SHUFFLED_BLOCK} when it was written with --shuffle=global, else {BLOCK}; when "
        "resuming, the run's own)",
    )
    order_window: int = flag(
        0,
        help="--order=global: blocks whose records are scattered over each other's positions; "
        "a batch mixes records of that many random places of the split, and each rank keeps up "
        "to 2 windows of records (1: blocks move whole; 0: the default for the split: "
        f"{SHUFFLED_WINDOW} when it was written with --shuffle=global, else {WINDOW}; when "
        "resuming, the run's own)",
    )
    shuffle_buffer: int = flag(10_000, help="records per shuffle buffer (--order=files)")
    log_every: int = flag(10, help="steps between log lines / metrics rows")
    checkpoint_every: int = flag(500, help="steps between checkpoints")
    keep_checkpoints: int = flag(3, help="checkpoints kept")
    eval_every: int = flag(0, help="steps between evaluations (0: at the end)")
    eval_batches: int = flag(0, help="batches per evaluation (0: whole manifest)")
    xla: bool = flag(False, help="compile the step with XLA")
    profile_steps: str = flag(
        "",
        help="A,B: trace global steps A to B with tf.profiler into MODEL_DIR/tensorboard/ "
        "(TensorBoard's profile tab); empty: no trace",
    )
    sample_system_every_ms: int = flag(
        500,
        help="period of the system-metrics sampler (CPU, memory, disk, network, GPU) writing "
        "MODEL_DIR/profile/system.jsonl; 0: off",
    )

    def __post_init__(self):
        check_choices(self)
        for name in ("steps", "global_batch_size", "log_every", "checkpoint_every",
                     "keep_checkpoints"):
            require(getattr(self, name) >= 1, f"--{name} must be >= 1, got {getattr(self, name)}")
        for name in ("learning_rate", "warmup_steps", "weight_decay", "clip_norm",
                     "shuffle_buffer", "eval_every", "eval_batches", "order_block",
                     "order_window"):
            require(getattr(self, name) >= 0, f"--{name} must be >= 0, got {getattr(self, name)}")
        require(0.0 <= self.min_lr_ratio <= 1.0,
                f"--min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    """The architecture flags; ``gpt_config`` adds what the data decides."""

    preset: str = flag("tiny", help="model size", choices=tuple(sorted(PRESETS)))
    dropout: float = flag(0.0, help="dropout rate")
    use_segments: bool = flag(
        False, help="mask attention at document boundaries (needs shards with segment ids)"
    )
    bf16: bool = flag(
        False, help="mixed precision: bfloat16 compute, float32 weights and optimizer state"
    )
    recompute: bool = flag(
        False,
        help="recompute block activations in the backward pass (less memory, ~1/3 more compute)",
    )

    def __post_init__(self):
        check_choices(self)

    def gpt_config(self, *, vocab_size: int, seq_len: int) -> GPTConfig:
        """The preset with these options and the data's vocabulary and context length."""
        return GPTConfig.from_preset(
            self.preset,
            vocab_size=vocab_size,
            seq_len=seq_len,
            dropout=self.dropout,
            use_segments=self.use_segments,
            recompute=self.recompute,
            dtype_policy="mixed_bfloat16" if self.bf16 else "float32",
        )


@dataclasses.dataclass(frozen=True)
class DistributionOptions:
    """Which backend, and how to reach the cluster (see ``trainer.distribute.resolve``)."""

    backend: str = flag(
        "auto", help="distribution backend (smddp: removed, exits naming the replacement)",
        choices=BACKENDS,
    )
    sagemaker_port: int = flag(
        SAGEMAKER_PORT,
        help="port for MultiWorkerMirroredStrategy when TF_CONFIG is built from SM_HOSTS",
    )

    def __post_init__(self):
        check_choices(self)
