"""A training run's model and tokenizer: what an export is built from.

At the end of training the loop has both at hand; ``python -m trainer.generate --model_dir``
and ``python -m trainer.export`` rebuild them from ``model_dir`` (``run.json``, the newest
checkpoint) and the training manifest the run recorded (its tokenizer file, checked against
the sha256 the run was trained with).
"""

from __future__ import annotations

import dataclasses

from common import storage
from common.errors import InputError
from schemas import manifest
from trainer import checkpoint, compat, run_record
from trainer.model import GPT, build_model


@dataclasses.dataclass(frozen=True)
class RunModel:
    """Attributes: model (weights of the newest checkpoint); tokenizer_proto (the
    ``tokenizer.model`` bytes); eos_id; checkpoint (the path restored)."""

    model: GPT
    tokenizer_proto: bytes
    eos_id: int
    checkpoint: str


def read_tokenizer(dataset: manifest.Dataset) -> bytes:
    """The dataset's tokenizer model bytes (local, mounted or ``s3://``)."""
    fs, path = storage.filesystem(dataset.tokenizer_path)
    with fs.open(path, "rb") as handle:
        return handle.read()


def load(model_dir: str, *, train_manifest: str | None = None) -> RunModel:
    """Rebuild the run in ``model_dir`` with its newest checkpoint and its tokenizer.

    Args:
        model_dir: a ``trainer.train`` run directory.
        train_manifest: where the training data's manifest is now, when it has moved since
            training (default: the path ``run.json`` recorded).
    """
    record = run_record.read(model_dir)
    if record is None:
        raise InputError(
            f"{model_dir}: no {run_record.RUN_FILE}; --model_dir is a trainer.train run directory"
        )
    dataset = manifest.load(train_manifest or record.data["train_manifest"])
    compat.verify_tokenizer_file(dataset)
    if compat.tokenizer_identity(dataset) != record.tokenizer:
        raise compat.CompatibilityError(
            f"{dataset.manifest_path}: tokenizer sha256 {dataset.tokenizer['sha256']} is not "
            f"the one {model_dir} was trained with ({record.tokenizer['sha256']}); pass the "
            "run's training manifest with --train_manifest"
        )
    model = build_model(record.model)
    restored = checkpoint.restore_model(model, model_dir=model_dir)
    return RunModel(
        model=model,
        tokenizer_proto=read_tokenizer(dataset),
        eos_id=dataset.tokenizer["special_ids"]["eos"],
        checkpoint=restored,
    )
