"""``python -m pipeline.verify --manifest PATH [--deep]``: check a dataset end to end.

Checks the manifest against its schema, then every shard: present, size, sha256, TFRecord
framing and CRCs, record count. ``--deep`` also parses every record with TensorFlow using only
the manifest's feature spec and checks shapes, token ids against the vocabulary, and the
shard's token and padding counts. Exit status 0 when clean, 1 when a problem was found (each
named with its shard), 2 when the manifest itself cannot be read.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
from typing import Iterator

import numpy as np

from schemas import manifest as manifest_lib
from schemas import storage
from schemas.records import iter_tfrecord_frames


@dataclasses.dataclass
class Report:
    shards: int = 0
    records: int = 0
    problems: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class _HashingReader:
    """File wrapper that hashes every byte read (one pass for sha256 and framing)."""

    def __init__(self, handle):
        self._handle = handle
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def read(self, size=-1):
        data = self._handle.read(size)
        self.sha256.update(data)
        self.bytes += len(data)
        return data


def check_shard(path: str, shard: dict) -> tuple[list[str], int]:
    """Problems of one shard (size, sha256, framing, record count) and its frame count."""
    name = shard["path"]
    fs, stripped = storage.filesystem(path)
    if not fs.exists(stripped):
        return [f"{name}: missing"], 0
    problems, frames = [], 0
    with fs.open(stripped, "rb") as handle:
        reader = _HashingReader(handle)
        try:
            for _ in iter_tfrecord_frames(reader):
                frames += 1
        except ValueError as err:
            problems.append(f"{name}: {err}")
        while reader.read(1 << 20):  # hash whatever framing did not consume
            pass
    if reader.bytes != shard["bytes"]:
        problems.append(f"{name}: {reader.bytes} bytes, manifest says {shard['bytes']}")
    if reader.sha256.hexdigest() != shard["sha256"]:
        problems.append(f"{name}: sha256 {reader.sha256.hexdigest()} does not match the manifest")
    if not problems and frames != shard["records"]:
        problems.append(f"{name}: {frames} records, manifest says {shard['records']}")
    return problems, frames


def iter_record_batches(dataset: manifest_lib.Dataset, path: str, *, batch: int = 512):
    """Parsed records of one shard as numpy arrays, with TensorFlow and the feature spec."""
    import tensorflow as tf

    from schemas.records_tf import parse_records

    spec = dataset.record_spec
    for serialized in tf.data.TFRecordDataset([path]).batch(batch):
        yield {k: v.numpy() for k, v in parse_records(serialized, spec).items()}


def deep_check(dataset: manifest_lib.Dataset, path: str, shard: dict) -> list[str]:
    name = shard["path"]
    pad = dataset.tokenizer["special_ids"]["pad"]
    vocab = dataset.tokenizer["vocab_size"]
    tokens = padding = 0
    try:
        for arrays in iter_record_batches(dataset, path):
            ids = arrays["tokens"]
            if ids.size and (ids.min() < 0 or ids.max() >= vocab):
                return [f"{name}: token id outside [0, {vocab})"]
            is_pad = ids == pad
            padding += int(is_pad.sum())
            tokens += int((~is_pad[:, 1:]).sum())
    except Exception as err:  # TensorFlow raises its own error types for corrupt data
        return [f"{name}: records do not parse: {type(err).__name__}: {err}".split("\n")[0]]
    problems = []
    if tokens != shard["tokens"] or padding != shard["padding_tokens"]:
        problems.append(f"{name}: {tokens} tokens / {padding} padding, manifest says "
                        f"{shard['tokens']} / {shard['padding_tokens']}")
    return problems


def verify(manifest_path: str, *, deep: bool = False) -> Report:
    dataset = manifest_lib.load(manifest_path, check_files=False)
    report = Report()
    for shard, path in zip(dataset.shards, dataset.shard_paths()):
        problems, frames = check_shard(path, shard)
        if deep and not problems:
            problems += deep_check(dataset, path, shard)
        report.shards += 1
        report.records += frames
        report.problems += problems
    return report


def iter_documents(dataset: manifest_lib.Dataset) -> Iterator[np.ndarray]:
    """Token ids of every document of a split, in order (the inverse of ``pipeline.pack``).

    Each record's first token repeats the previous record's last one (or is a chunk's leading
    EOS), so it is dropped; padding is dropped; the rest is ``d1 EOS d2 EOS ...``.
    """
    pad = dataset.tokenizer["special_ids"]["pad"]
    eos = dataset.tokenizer["special_ids"]["eos"]
    carry = np.zeros(0, dtype=np.int32)  # a document continued from the previous batch
    for path in dataset.shard_paths():
        for arrays in iter_record_batches(dataset, path):
            body = arrays["tokens"][:, 1:]
            stream = np.concatenate([carry, body[body != pad]])
            start = 0
            for end in np.flatnonzero(stream == eos):
                yield stream[start:end]
                start = end + 1
            carry = stream[start:]
    if len(carry):
        raise ValueError(f"{dataset.manifest_path}: the split ends inside a document "
                         "(written with --last_record=drop?)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.verify", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--manifest", required=True, help="manifest.json or its directory")
    parser.add_argument("--deep", action="store_true", help="also parse every record")
    args = parser.parse_args(argv)
    try:
        report = verify(args.manifest, deep=args.deep)
    except manifest_lib.ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    status = "OK" if report.ok else f"{len(report.problems)} PROBLEM(S)"
    print(f"{status}: {report.shards} shards, {report.records} records checked"
          f"{' (deep)' if args.deep else ''}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
