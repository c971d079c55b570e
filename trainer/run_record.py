"""``model_dir/run.json``: the model's config and the data it was trained on, written by the chief.

A resumed run and ``trainer.evaluate`` rebuild the exact model from it and refuse data from
another tokenizer. ``read`` brings a file of an older version up to date (``_upgrade``), so no
other module knows what older trainers wrote.
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
VERSION = 2  # 2: the data section records --seed


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """Attributes: model, train: the configs; tokenizer: ``compat.tokenizer_identity``;
    data: how the data was split (train manifest, input pipelines, global batch) and its
    order and seed, rewritten by a resumed run that changes them
    (``trainer.input.train_input.settle_order``); the rest is the first run's."""

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
    if doc.get("format") != FORMAT or doc.get("version") not in (1, VERSION):
        raise InputError(
            f"{path}: format {doc.get('format')!r} version {doc.get('version')!r} is not "
            f"{FORMAT} version {VERSION} (or 1); use the trainer that wrote it or a new "
            "--model_dir"
        )
    if doc["version"] == 1:
        doc = _upgrade(doc)
    return RunRecord(
        model=GPTConfig.from_dict(doc["model"]),
        train=TrainConfig(**doc["train"]),
        tokenizer=doc["tokenizer"],
        data=doc["data"],
    )


def _upgrade(doc: dict) -> dict:
    """A version-1 record as version 2 says it. Version 1 may predate ``--order`` (the run
    read its shards per rank), ``--order_block`` and ``--order_window`` (blocks of one record,
    moved whole); its data section never held the seed: the first run's, from its train
    section, which is what every resume of it used unless given another ``--seed``."""
    train = TrainConfig(**{"order": "files", **doc["train"]})
    data = {"order": "files", "order_block": 1, "order_window": 1, "seed": train.seed,
            **doc["data"]}
    return {**doc, "version": VERSION, "train": train.to_dict(), "data": data}
