"""``model_dir/run.json``: the model's config and the data it was trained on, written by the chief.

A resumed run and ``trainer.evaluate`` rebuild the exact model from it and refuse data from
another tokenizer.
"""

from __future__ import annotations

import dataclasses
import json

from common import storage
from common.errors import InputError
from trainer.config import TrainConfig
from trainer.model.config import GPTConfig

RUN_FILE = "run.json"
FORMAT = "pilepack.run"
VERSION = 1


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """Attributes: model, train: the configs; tokenizer: ``compat.tokenizer_identity``;
    data: how the data was split (train manifest, input pipelines, global batch) and its
    order, rewritten by a resumed run that changes the order (``train_input.recorded_order``);
    the rest is the first run's."""

    model: GPTConfig
    train: TrainConfig
    tokenizer: dict
    data: dict

    def to_json(self) -> str:
        doc = {
            "format": FORMAT,
            "version": VERSION,
            "model": self.model.to_dict(),
            "train": self.train.to_dict(),
            "tokenizer": self.tokenizer,
            "data": self.data,
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def write(record: RunRecord, *, model_dir: str) -> str:
    """Atomically write ``model_dir/run.json`` (the caller gates this to the chief)."""
    path = storage.join(model_dir, RUN_FILE)
    with storage.atomic_open(path, "wb") as handle:
        handle.write(record.to_json().encode())
    return path


def read(model_dir: str) -> RunRecord | None:
    """The run record in ``model_dir``, or None for a new run."""
    path = storage.join(model_dir, RUN_FILE)
    fs, stripped = storage.filesystem(path)
    if not fs.exists(stripped):
        return None
    with fs.open(stripped, "rb") as handle:
        try:
            doc = json.loads(handle.read().decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise InputError(
                f"{path}: not valid JSON ({err}); restore it or use a new --model_dir"
            ) from err
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise InputError(
            f"{path}: format {doc.get('format')!r} version {doc.get('version')!r} is not "
            f"{FORMAT} version {VERSION}; use the trainer that wrote it or a new --model_dir"
        )
    return RunRecord(
        model=GPTConfig.from_dict(doc["model"]),
        # runs recorded before --order existed read their shards per rank
        train=TrainConfig(**{"order": "files", **doc["train"]}),
        tokenizer=doc["tokenizer"],
        data=doc["data"],
    )
