"""The GPT: one definition, imported by every trainer path."""

from trainer.model.config import PRESETS, GPTConfig, param_count
from trainer.model.gpt import GPT, build_model

__all__ = ["GPT", "PRESETS", "GPTConfig", "build_model", "param_count"]
