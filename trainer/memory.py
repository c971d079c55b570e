"""What fits on one GPU: parameters, optimizer state and activations of a GPTConfig.

    python -m trainer.memory --vocab_size=32768 --seq_len=2048   # the README's table

Data parallelism keeps a full replica per GPU, so the model trains on N GPUs only if it
trains on one. Bytes per parameter with ``--bf16`` (Keras' mixed_bfloat16: float32 variables,
bfloat16 compute) and AdamW: weights 4 + gradients 4 + Adam m 4 + Adam v 4 + the bfloat16
copies of the weights made for compute 2 = 18.

Activations kept for the backward pass, per sequence of s tokens and per block (bf16; after
Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"):
34 s h bytes for the dense parts, plus 7 a s^2 for attention's (a, s, s) matrices (the float32
softmax output 4, its bfloat16 cast 2 and the causal mask 1 byte). With ``--recompute`` a block
keeps only its input (2 s h) and one block's activations exist at a time. The head's float32
logits and their gradient take 10 s V more. float32 runs double the activation bytes.
"""

from __future__ import annotations

import dataclasses
import sys

from common import cli
from common.flags import ArgumentParser, add_flags, flag, from_args, require
from trainer.model.config import PRESETS, GPTConfig, param_count

GIB = 1 << 30
STATE_BYTES_PER_PARAM = 4 + 4 + 4 + 4 + 2
DEVICES = {"80 GB (A100/H100)": 80e9, "141 GB (H200)": 141e9}
RESERVE = 0.10  # CUDA context, XLA/cuDNN workspaces, fragmentation


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Attributes: params; state_bytes (weights, gradients, AdamW state); activation_bytes
    (per sequence of seq_len tokens)."""

    params: int
    state_bytes: int
    activation_bytes: int

    def max_sequences(self, device_bytes: float) -> int:
        """Sequences per GPU per step that fit (0: the model's state alone does not fit)."""
        free = device_bytes * (1 - RESERVE) - self.state_bytes
        return max(int(free // self.activation_bytes), 0)


def estimate(config: GPTConfig) -> MemoryEstimate:
    """Memory of training ``config`` with AdamW on one GPU (see the module docstring)."""
    s, h, a, layers = config.seq_len, config.hidden_dim, config.num_heads, config.num_layers
    block = 34 * s * h + 7 * a * s * s
    kept = layers * 2 * s * h + block if config.recompute else layers * block
    activations = kept + 10 * s * config.vocab_size
    if config.dtype_policy == "float32":
        activations *= 2
    params = param_count(config)
    return MemoryEstimate(
        params=params, state_bytes=STATE_BYTES_PER_PARAM * params, activation_bytes=activations
    )


def table(*, vocab_size: int, seq_len: int, presets: list[str]) -> str:
    """A markdown table: per preset, parameters, state, and sequences per GPU that fit."""
    head = [
        "preset",
        "parameters",
        "weights+grads+AdamW (GiB)",
        "activations/seq (GiB)",
        "activations/seq, recompute (GiB)",
    ]
    for device in DEVICES:
        head += [f"seqs/GPU {device}", f"seqs/GPU {device}, recompute"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in presets:
        plain = GPTConfig.from_preset(
            name, vocab_size=vocab_size, seq_len=seq_len, dtype_policy="mixed_bfloat16"
        )
        recompute = dataclasses.replace(plain, recompute=True)
        a, b = estimate(plain), estimate(recompute)
        row = [
            name,
            f"{a.params / 1e9:.2f} B",
            f"{a.state_bytes / GIB:.1f}",
            f"{a.activation_bytes / GIB:.2f}",
            f"{b.activation_bytes / GIB:.2f}",
        ]
        for device_bytes in DEVICES.values():
            row += [str(a.max_sequences(device_bytes)), str(b.max_sequences(device_bytes))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class MemoryFlags:
    """Everything ``python -m trainer.memory`` accepts."""

    vocab_size: int = flag(32768, help="the tokenizer's vocabulary")
    seq_len: int = flag(2048, help="tokens per training sequence")
    presets: tuple[str, ...] = flag(
        ("125m", "350m", "760m", "1.3b", "2.7b", "6.7b", "13b"), help="model presets, one row each"
    )

    def __post_init__(self):
        unknown = sorted(set(self.presets) - set(PRESETS))
        require(not unknown, f"--presets: unknown {unknown}; choose from {sorted(PRESETS)}")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.memory", description=__doc__)
    add_flags(parser, MemoryFlags)
    return parser


def run(flags: MemoryFlags) -> None:
    print(table(vocab_size=flags.vocab_size, seq_len=flags.seq_len, presets=list(flags.presets)))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(from_args(MemoryFlags, args)))


if __name__ == "__main__":
    sys.exit(main())
