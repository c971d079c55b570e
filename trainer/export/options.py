"""How to generate: the options of ``python -m trainer.generate`` and the export's defaults."""

from __future__ import annotations

import dataclasses

from common.flags import flag, require


@dataclasses.dataclass(frozen=True)
class GenerationOptions:
    """Decoding options; ``serving_default`` of an export uses the values it was exported with."""

    max_new_tokens: int = flag(
        64, help="new tokens per prompt at most (decoding also stops at EOS and at seq_len)"
    )
    temperature: float = flag(0.0, help="0: greedy; else sample from softmax(logits / T)")
    top_k: int = flag(0, help="sample among the k most likely tokens (0: all)")
    top_p: float = flag(
        1.0, help="sample among the fewest tokens whose probabilities reach p (1: all)"
    )
    seed: int = flag(0, help="sampling seed: the same seed and prompt give the same text")

    def __post_init__(self):
        require(
            self.max_new_tokens >= 0, f"--max_new_tokens must be >= 0, got {self.max_new_tokens}"
        )
        require(self.temperature >= 0, f"--temperature must be >= 0, got {self.temperature}")
        require(self.top_k >= 0, f"--top_k must be >= 0, got {self.top_k}")
        require(0 < self.top_p <= 1, f"--top_p must be in (0, 1], got {self.top_p}")
