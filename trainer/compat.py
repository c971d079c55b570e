"""Refuse data that does not fit the model: tokenizer, vocabulary, context length, segments."""

from __future__ import annotations

from common.errors import PilepackError
from schemas.manifest import Dataset
from trainer.model.config import GPTConfig


class CompatibilityError(PilepackError, ValueError):
    """A dataset that does not match the model (or another dataset) it is used with."""


def tokenizer_identity(dataset: Dataset) -> dict:
    """What the model depends on: the tokenizer's sha256, vocabulary and special ids."""
    tok = dataset.tokenizer
    return {
        "sha256": tok["sha256"],
        "vocab_size": tok["vocab_size"],
        "special_ids": tok["special_ids"],
    }


def verify_tokenizer_file(dataset: Dataset) -> None:
    """The tokenizer file beside the manifest must hash to the manifest's sha256."""
    problem = dataset.tokenizer_file_problem()
    if problem is not None:
        raise CompatibilityError(f"{dataset.manifest_path}: {problem}")


def check_same_tokenization(reference: Dataset, other: Dataset) -> None:
    """Train and eval data must share tokenizer and seq_len, or eval loss means nothing."""
    if (
        tokenizer_identity(reference) != tokenizer_identity(other)
        or reference.seq_len != other.seq_len
    ):
        raise CompatibilityError(
            f"{other.manifest_path} (tokenizer {other.tokenizer['sha256'][:12]}, vocab "
            f"{other.tokenizer['vocab_size']}, seq_len {other.seq_len}) does not match "
            f"{reference.manifest_path} (tokenizer {reference.tokenizer['sha256'][:12]}, vocab "
            f"{reference.tokenizer['vocab_size']}, seq_len {reference.seq_len}); build both "
            "with the same --tokenizer_model and --seq_len"
        )


def check_model_fits(dataset: Dataset, model: GPTConfig, *, tokenizer: dict | None = None) -> None:
    """The model (and, when resuming, the tokenizer it was trained with) must fit the dataset.

    Args:
        dataset: the manifest about to be read.
        model: the model's configuration (from flags, or saved in model_dir).
        tokenizer: ``tokenizer_identity`` saved with the model, when there is one.
    """
    where = dataset.manifest_path
    if tokenizer is not None and tokenizer != tokenizer_identity(dataset):
        raise CompatibilityError(
            f"{where}: tokenizer sha256 {dataset.tokenizer['sha256']} (vocab "
            f"{dataset.tokenizer['vocab_size']}) differs from the one the model in model_dir was "
            f"trained with ({tokenizer['sha256']}, vocab {tokenizer['vocab_size']}); use data "
            "tokenized with the same model, or a new --model_dir"
        )
    if dataset.seq_len != model.seq_len:
        raise CompatibilityError(
            f"{where}: seq_len {dataset.seq_len} differs from the model's {model.seq_len}; "
            "rebuild the data with --seq_len, or use a new --model_dir"
        )
    if dataset.tokenizer["vocab_size"] != model.vocab_size:
        raise CompatibilityError(
            f"{where}: vocab_size {dataset.tokenizer['vocab_size']} differs from the model's "
            f"{model.vocab_size}; use data from the same tokenizer, or a new --model_dir"
        )
    if model.use_segments and not dataset.record_spec.with_segments:
        raise CompatibilityError(
            f"{where}: --use_segments needs segment_ids and positions in the shards; rebuild "
            "the data with --segment_ids, or train without --use_segments"
        )
