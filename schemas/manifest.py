"""The dataset manifest: JSON Schema validation on write and on read, atomic commit.

``manifest.json`` is written last, beside the shards, only after every shard it lists is
complete: its presence means the dataset is complete. Readers refuse unknown versions and
shard paths that could escape the dataset directory.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import posixpath
from importlib import resources
from typing import Any

import jsonschema

from common import storage
from schemas.dataset_spec import DatasetSpec
from schemas.errors import ManifestError
from schemas.formats import FORMATS
from schemas.records import RecordSpec

__all__ = ["MANIFEST_NAME", "FORMAT", "VERSION", "Dataset", "ManifestError", "load", "validate",
           "write"]

MANIFEST_NAME = "manifest.json"
FORMAT = "pilepack.dataset"
VERSION = 3
# Version 3 added ``formats`` and a section per extra format (docs/formats.md); nothing of version
# 2 changed meaning, so a version-2 manifest is still read (as ``formats: ["tfrecord"]``).
SUPPORTED_VERSIONS = (2, 3)
# What changed, for the error a reader of an older manifest gets.
OLDER_VERSIONS = {
    1: "version 1 repeated seq_len, the record length and the token dtype in several places",
}


@functools.lru_cache(maxsize=1)
def json_schema() -> dict:
    text = resources.files("schemas").joinpath("manifest.schema.json").read_text()
    return json.loads(text)


def validate(doc: Any, *, source: str) -> None:
    """Raise ManifestError naming ``source`` and the first violation, else return."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: a manifest must be a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise ManifestError(f"{source}: not a {FORMAT} manifest (format={doc.get('format')!r})")
    if doc.get("version") in OLDER_VERSIONS:
        raise ManifestError(
            f"{source}: manifest version {doc['version']} was written by an older pilepack "
            f"({OLDER_VERSIONS[doc['version']]}); this pilepack reads version {VERSION}: "
            "rebuild the dataset with python -m pipeline.run"
        )
    if doc.get("version") not in SUPPORTED_VERSIONS:
        raise ManifestError(
            f"{source}: manifest version {doc.get('version')!r} is not supported by this "
            f"pilepack (supports {SUPPORTED_VERSIONS}); upgrade pilepack or rebuild the dataset"
        )
    validator = jsonschema.Draft202012Validator(json_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ManifestError(f"{source}: invalid manifest at {where}: {error.message}")
    for entry in doc["shards"] + doc["dead_letters"] + doc.get("doc_hashes", {}).get("files", []):
        check_relative_path(entry["path"], source=source)
    for name in FORMATS:  # each extra format's section lists its files (a pair: two entries)
        for entry in _path_entries(doc.get(name, {}).get("files", [])):
            check_relative_path(entry["path"], source=source)
    check_relative_path(doc["tokenizer"]["file"], source=source)
    DatasetSpec.from_manifest(doc, source=source)


def _path_entries(value) -> list[dict]:
    """Every dict with a ``path`` in ``value``, however deep (a pair of files: two entries)."""
    if isinstance(value, dict):
        own = [value] if isinstance(value.get("path"), str) else []
        return own + [entry for item in value.values() for entry in _path_entries(item)]
    if isinstance(value, list):
        return [entry for item in value for entry in _path_entries(item)]
    return []


def check_relative_path(path: str, *, source: str) -> None:
    """Shard paths are plain relative paths that stay inside the dataset directory."""
    normalized = posixpath.normpath(path)
    if (
        "://" in path
        or path.startswith("/")
        or "\\" in path
        or normalized.startswith("..")
        or normalized != path
    ):
        raise ManifestError(
            f"{source}: path {path!r} is not a plain relative path inside the dataset directory"
        )


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def write(doc: dict, *, directory: str) -> str:
    """Validate and atomically write ``directory/manifest.json``; return its path."""
    path = storage.join(directory, MANIFEST_NAME)
    validate(doc, source=path)
    with storage.atomic_open(path, "wb") as handle:
        handle.write(dumps(doc).encode())
    return path


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A validated manifest plus where it lives."""

    manifest_path: str
    doc: dict

    @property
    def directory(self) -> str:
        return storage.dirname(self.manifest_path)

    @property
    def spec(self) -> DatasetSpec:
        return DatasetSpec.from_manifest(self.doc, source=self.manifest_path)

    @property
    def seq_len(self) -> int:
        return self.doc["seq_len"]

    @property
    def record_spec(self) -> RecordSpec:
        return self.spec.record

    @property
    def tokenizer(self) -> dict:
        return self.doc["tokenizer"]

    @property
    def tokenizer_path(self) -> str:
        return storage.join(self.directory, self.doc["tokenizer"]["file"])

    @property
    def shards(self) -> list[dict]:
        return self.doc["shards"]

    @property
    def formats(self) -> list[str]:
        """The formats written (a version-2 manifest: TFRecord only)."""
        return self.doc.get("formats", ["tfrecord"])

    def shard_paths(self) -> list[str]:
        return [storage.join(self.directory, shard["path"]) for shard in self.shards]

    def tokenizer_file_problem(self) -> str | None:
        """None when the tokenizer file beside the manifest hashes to the manifest's sha256;
        else what is wrong and how to fix it (the one check verify and the trainer share)."""
        name = self.tokenizer["file"]
        fs, path = storage.filesystem(self.tokenizer_path)
        if not fs.exists(path):
            return f"{name}: missing (the tokenizer file is missing: copy the whole dataset)"
        digest = hashlib.sha256()
        with fs.open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != self.tokenizer["sha256"]:
            return (f"{name}: sha256 does not match the manifest: the file has sha256 "
                    f"{digest.hexdigest()}, the manifest says {self.tokenizer['sha256']} "
                    "(corrupt or replaced tokenizer; rebuild or recopy the dataset)")
        return None


def load(path: str, *, check_files: bool = True) -> Dataset:
    """Read and validate a manifest (a path to it, or to its directory)."""
    if not path.endswith(".json"):
        path = storage.join(path, MANIFEST_NAME)
    fs, stripped = storage.filesystem(path)
    # An object store's refusal (credentials, 403, throttling) names the path and the fix.
    with storage.store_errors(path):
        if not fs.exists(stripped):
            storage.refuse_missing_bucket(fs, path)
            raise ManifestError(
                f"{path}: no manifest here; a directory without manifest.json is not a "
                "complete dataset (was the pipeline interrupted? rerun it)"
            )
        try:
            with fs.open(stripped, "rb") as handle:
                doc = json.loads(handle.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ManifestError(f"{path}: not valid JSON ({err})") from err
    validate(doc, source=path)
    dataset = Dataset(manifest_path=path, doc=doc)
    if check_files:
        for shard, shard_path in zip(dataset.shards, dataset.shard_paths()):
            _, shard_stripped = storage.filesystem(shard_path)
            if not fs.exists(shard_stripped):
                raise ManifestError(f"{path}: shard {shard['path']} is listed but missing")
            size = fs.size(shard_stripped)
            if size != shard["bytes"]:
                raise ManifestError(
                    f"{path}: shard {shard['path']} has {size} bytes, the manifest says "
                    f"{shard['bytes']} (corrupt or partial copy?)"
                )
    return dataset
