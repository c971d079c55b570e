"""A trained tokenizer committed for a rerun: a run that dies after training keeps the model,
and its rerun (the same command) reuses it instead of sampling and training again.

``tokenizer.committed.json`` is written atomically *after* the model, so its presence means the
model is complete. It holds the fingerprint of everything the training read (the inputs' path,
size and version, the read and training options, the format version), the model's sha256 and
the training record the manifest keeps. A rerun reuses the model only when the fingerprint is
the same and the model file still has that sha256; anything else trains again. The file is
removed once the manifest is committed (``forget``): a dataset holds no resume state.

    fingerprint = training_fingerprint(read=read, training=training, inputs=inputs)
    record = load(output, fingerprint=fingerprint)  # None: train, then commit(...)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging

from common import storage
from tokenizer.model_info import fingerprint as model_sha256
from tokenizer.spec import MODEL_FILENAME

log = logging.getLogger(__name__)

COMMITTED_NAME = "tokenizer.committed.json"
# Raise when the sample, the training or the model's bytes change for the same options: a
# committed model of an older format is then trained again.
FORMAT = 1


def training_fingerprint(*, read, training, inputs) -> str:
    """sha256 of what a trained model depends on: ``read`` (``ReadConfig``), ``training``
    (``TokenizerTrainingConfig``), and each input's path, size and version (mtime or ETag).

    Any change to one of them gives another fingerprint, so a committed model is reused only
    for the very inputs and options that trained it. ``""`` when an input's version is unknown
    (its file system reports neither mtime nor ETag): a change could not be seen, so nothing is
    reused.
    """
    if any(not f.version for f in inputs):
        return ""
    doc = {"format": FORMAT, "read": dataclasses.asdict(read),
           "training": dataclasses.asdict(training),
           "inputs": [[f.path, f.bytes, f.version] for f in inputs]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def commit(output: str, *, fingerprint: str, sha256: str, record: dict) -> None:
    """Record that ``output``'s model (already written, whose sha256 is ``sha256``) was trained
    as ``fingerprint`` says, with the manifest's training ``record``."""
    with storage.atomic_open(storage.join(output, COMMITTED_NAME)) as handle:
        handle.write(json.dumps({"fingerprint": fingerprint, "model_sha256": sha256,
                                 "trained": record}, sort_keys=True).encode())


def load(output: str, *, fingerprint: str) -> dict | None:
    """The training record of ``output``'s committed model when it was trained as
    ``fingerprint`` says and is intact; else None (train again), saying why in the log."""
    if not fingerprint:
        log.info("resume: an input's version (mtime or ETag) is unknown; training the "
                 "tokenizer again")
        return None
    fs, path = storage.filesystem(storage.join(output, COMMITTED_NAME))
    try:
        doc = json.loads(fs.cat_file(path))
    except FileNotFoundError:
        return None
    except ValueError:
        log.info("resume: %s is unreadable; training the tokenizer again", path)
        return None
    if not isinstance(doc, dict) or doc.get("fingerprint") != fingerprint:
        log.info("resume: the inputs or options changed since the tokenizer was trained; "
                 "training it again")
        return None
    model_fs, model_path = storage.filesystem(storage.join(output, MODEL_FILENAME))
    try:
        sha256 = model_sha256(model_fs.cat_file(model_path))
    except FileNotFoundError:
        sha256 = None
    if sha256 != doc.get("model_sha256") or not isinstance(doc.get("trained"), dict):
        log.info("resume: %s is missing or changed since it was trained; training it again",
                 model_path)
        return None
    return doc["trained"]


def forget(output: str) -> None:
    """Remove the commit record (the manifest is committed: nothing is left to resume)."""
    fs, path = storage.filesystem(storage.join(output, COMMITTED_NAME))
    try:
        fs.rm(path)
    except FileNotFoundError:
        pass
