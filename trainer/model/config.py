"""The GPT's typed configuration and its presets (architecture only; data sets vocab/seq_len).

Presets follow the GPT-3 paper's table (Brown et al. 2020, table 2.1) from ``125m`` up; the
names are the paper's parameter counts, which assume a 50k vocabulary and a tied head. Ours
has an untied head and the tokenizer's vocabulary, so ``param_count`` (printed at start-up)
is the number to trust.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from common.errors import ConfigError

# name -> (num_layers, num_heads, hidden_dim)
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 2, 64),  # for tests and CPU smoke runs
    "mini": (4, 4, 256),
    "125m": (12, 12, 768),
    "350m": (24, 16, 1024),
    "760m": (24, 16, 1536),
    "1.3b": (24, 32, 2048),
    "2.7b": (32, 32, 2560),
    "6.7b": (32, 32, 4096),
    "13b": (40, 40, 5120),
}

DTYPE_POLICIES = ("float32", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """Everything needed to rebuild the exact model; saved beside every checkpoint.

    Attributes:
        vocab_size: rows of the token embedding and columns of the head (the tokenizer's).
        seq_len: context length: rows of the position embedding (the dataset's ``seq_len``).
        num_layers: decoder blocks.
        num_heads: attention heads; each has ``hidden_dim // num_heads`` dimensions.
        hidden_dim: width of the residual stream (nanoGPT's ``n_embd``).
        intermediate_dim: feed-forward width; 0 means ``4 * hidden_dim``.
        dropout: on embeddings, attention weights and both residual branches.
        layer_norm_epsilon: LayerNorm epsilon.
        use_segments: document-boundary masking from the shards' ``segment_ids``/``positions``.
        dtype_policy: ``float32`` or ``mixed_bfloat16`` (fp32 weights, bf16 compute).
        recompute: recompute each block's activations in the backward pass (saves memory).
    """

    vocab_size: int
    seq_len: int
    num_layers: int
    num_heads: int
    hidden_dim: int
    intermediate_dim: int = 0
    dropout: float = 0.0
    layer_norm_epsilon: float = 1e-5
    use_segments: bool = False
    dtype_policy: str = "float32"
    recompute: bool = False

    def __post_init__(self):
        for name in ("vocab_size", "seq_len", "num_layers", "num_heads", "hidden_dim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"GPTConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden_dim % self.num_heads:
            raise ConfigError(
                f"hidden_dim {self.hidden_dim} is not divisible by num_heads {self.num_heads}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.dtype_policy not in DTYPE_POLICIES:
            raise ConfigError(
                f"dtype_policy must be one of {DTYPE_POLICIES}, got {self.dtype_policy!r}"
            )
        if self.intermediate_dim == 0:
            object.__setattr__(self, "intermediate_dim", 4 * self.hidden_dim)

    @classmethod
    def from_preset(
        cls, name: str, *, vocab_size: int, seq_len: int, **overrides: Any
    ) -> GPTConfig:
        """The preset's architecture with the data's vocabulary and context length."""
        if name not in PRESETS:
            raise ConfigError(
                f"unknown preset {name!r}; choose one of {sorted(PRESETS)} (--preset)"
            )
        num_layers, num_heads, hidden_dim = PRESETS[name]
        return cls(
            vocab_size=vocab_size,
            seq_len=seq_len,
            num_layers=num_layers,
            num_heads=num_heads,
            hidden_dim=hidden_dim,
            **overrides,
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, doc: dict) -> GPTConfig:
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ConfigError(f"unknown GPTConfig fields {unknown} (saved by a newer trainer?)")
        return cls(**doc)


def param_count(config: GPTConfig) -> int:
    """Parameters of ``GPT(config)``, counted by hand (a test checks it against Keras).

    Per block: two LayerNorms (4d), qkv (3d^2 + 3d), output projection (d^2 + d), feed-forward
    (2 d f + f + d). Plus token and position embeddings, a final LayerNorm, an untied head.
    """
    d, f = config.hidden_dim, config.intermediate_dim
    block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * f + f + d)
    embeddings = config.vocab_size * d + config.seq_len * d
    return embeddings + config.num_layers * block + 2 * d + d * config.vocab_size
