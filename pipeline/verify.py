"""``python -m pipeline.verify --manifest PATH [--deep]``: check a dataset end to end.

Checks the manifest (schema, version, safe relative paths, record spec, totals and accounting
that add up), the tokenizer file (present, sha256) and the dead-letter files (present, record
counts), then every shard in one streaming pass: present, size, sha256, TFRecord framing and
CRCs, record count. ``--deep`` also parses every record with TensorFlow from the manifest's
feature spec alone and checks shapes, token ids against the vocabulary, and the shard's token
and padding counts. Every file is read through fsspec, so ``s3://`` datasets work like local
ones. Exit status 0 when clean, 1 when a problem was found (each named with its file), 2 when
the manifest itself cannot be used.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from typing import Iterator

# TensorFlow (imported lazily for --deep) logs device probing at INFO; keep the report readable.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from schemas import manifest as manifest_lib
from common import storage
from schemas.records import iter_tfrecord_frames

_BATCH = 256  # records parsed per TensorFlow call


@dataclasses.dataclass
class Report:
    shards: int = 0
    records: int = 0
    problems: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)  # worth knowing, not wrong

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


class _DeepCheck:
    """Parses a shard's records in batches; counts real and padding tokens."""

    def __init__(self, dataset: manifest_lib.Dataset):
        self._spec = dataset.record_spec
        self._pad = dataset.tokenizer["special_ids"]["pad"]
        self._vocab = dataset.tokenizer["vocab_size"]
        self.tokens = self.padding = 0
        self.problem: str | None = None

    def add(self, payloads: list[bytes], *, first_record: int) -> None:
        if self.problem or not payloads:
            return
        try:
            ids = parse_payloads(payloads, self._spec)["tokens"]  # (N, seq_len + 1)
        except Exception as err:  # TensorFlow raises its own types for malformed records
            message = f"{type(err).__name__}: {err}".split("\n")[0][:300]
            self.problem = (f"records {first_record}..{first_record + len(payloads) - 1} do not "
                            f"parse as the manifest's features: {message}")
            return
        if ids.min() < 0 or ids.max() >= self._vocab:
            self.problem = f"a token id outside [0, {self._vocab}) in records from {first_record}"
            return
        is_pad = ids == self._pad
        self.padding += int(is_pad.sum())
        self.tokens += int((~is_pad[:, 1:]).sum())


def parse_payloads(payloads: list[bytes], spec) -> dict[str, np.ndarray]:
    """Serialized records -> numpy arrays [N, seq_len + 1], with TensorFlow and the spec."""
    import tensorflow as tf

    from schemas.records_tf import parse_records

    parsed = parse_records(tf.constant(payloads, dtype=tf.string), spec)
    return {name: value.numpy() for name, value in parsed.items()}


def check_shard(path: str, shard: dict, *, deep: _DeepCheck | None = None
                ) -> tuple[list[str], int]:
    """Problems of one shard (size, sha256, framing, record count[, records]) and its records."""
    name = shard["path"]
    fs, stripped = storage.filesystem(path)
    try:
        if not fs.exists(stripped):
            return [f"{name}: missing"], 0
        problems, frames, batch = [], 0, []
        with fs.open(stripped, "rb") as handle:
            reader = _HashingReader(handle)
            try:
                for payload in iter_tfrecord_frames(reader):
                    frames += 1
                    if deep is not None:
                        batch.append(payload)
                        if len(batch) == _BATCH:
                            deep.add(batch, first_record=frames - len(batch))
                            batch = []
            except ValueError as err:
                problems.append(f"{name}: {err}")
            while reader.read(1 << 20):  # hash whatever framing did not consume
                pass
    except OSError as err:
        return [f"{name}: cannot be read: {type(err).__name__}: {err}"], 0
    if reader.bytes != shard["bytes"]:
        problems.append(f"{name}: {reader.bytes} bytes, manifest says {shard['bytes']}")
    if reader.sha256.hexdigest() != shard["sha256"]:
        problems.append(f"{name}: sha256 {reader.sha256.hexdigest()} does not match the manifest")
    if not problems and frames != shard["records"]:
        problems.append(f"{name}: {frames} records, manifest says {shard['records']}")
    if deep is not None and not problems:
        deep.add(batch, first_record=frames - len(batch))
        if deep.problem:
            problems.append(f"{name}: {deep.problem}")
        elif (deep.tokens, deep.padding) != (shard["tokens"], shard["padding_tokens"]):
            problems.append(f"{name}: {deep.tokens} tokens / {deep.padding} padding, manifest "
                            f"says {shard['tokens']} / {shard['padding_tokens']}")
    return problems, frames


def check_consistency(doc: dict) -> list[str]:
    """Totals and accounting that must add up (a hand-edited or mixed-up manifest fails)."""
    problems = []
    shards, totals, acct = doc["shards"], doc["totals"], doc["accounting"]
    for key, field in (("shards", None), ("bytes", "bytes"), ("records", "records"),
                       ("tokens", "tokens"), ("padding_tokens", "padding_tokens")):
        actual = len(shards) if field is None else sum(s[field] for s in shards)
        if totals[key] != actual:
            problems.append(f"manifest: totals.{key} is {totals[key]}, its shards add up to "
                            f"{actual}")
    filtered, rejected = sum(acct["filtered"].values()), sum(acct["rejected"].values())
    if acct["read"] != acct["written"] + filtered + rejected:
        problems.append(f"manifest: accounting does not add up: read {acct['read']} != written "
                        f"{acct['written']} + filtered {filtered} + rejected {rejected}")
    if sum(d["records"] for d in doc["dead_letters"]) != rejected:
        problems.append(f"manifest: {rejected} rejected records but "
                        f"{sum(d['records'] for d in doc['dead_letters'])} dead letters listed")
    return problems


def check_side_files(dataset: manifest_lib.Dataset) -> list[str]:
    """The tokenizer (sha256) and the dead-letter files (record counts)."""
    problems = []
    tokenizer = dataset.tokenizer
    try:
        fs, stripped = storage.filesystem(dataset.tokenizer_path)
        if not fs.exists(stripped):
            problems.append(f"{tokenizer['file']}: missing")
        else:
            with fs.open(stripped, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            if digest != tokenizer["sha256"]:
                problems.append(f"{tokenizer['file']}: sha256 {digest} does not match the "
                                "manifest (a different tokenizer?)")
        for entry in dataset.doc["dead_letters"]:
            fs, stripped = storage.filesystem(storage.join(dataset.directory, entry["path"]))
            if not fs.exists(stripped):
                problems.append(f"{entry['path']}: missing")
                continue
            with fs.open(stripped, "rb") as handle:
                lines = sum(1 for line in handle if line.strip())
            if lines != entry["records"]:
                problems.append(f"{entry['path']}: {lines} records, manifest says "
                                f"{entry['records']}")
    except OSError as err:
        problems.append(f"cannot read a file of the dataset: {type(err).__name__}: {err}")
    return problems


def unlisted_files(dataset: manifest_lib.Dataset) -> list[str]:
    """Files beside the manifest that it does not list (leftovers; harmless, but named)."""
    fs, root = storage.filesystem(dataset.directory)
    root = root.rstrip("/")
    listed = {shard["path"] for shard in dataset.shards}
    listed |= {d["path"] for d in dataset.doc["dead_letters"]}
    listed |= {manifest_lib.MANIFEST_NAME, dataset.tokenizer["file"], "tokenizer.vocab"}
    try:
        found = [path[len(root) + 1:] for path in fs.find(root)]
    except OSError:
        return []
    return sorted(path for path in found if path not in listed)


def verify(manifest_path: str, *, deep: bool = False) -> Report:
    """Check a dataset; raises ManifestError when the manifest itself is unusable."""
    dataset = manifest_lib.load(manifest_path, check_files=False)
    try:
        dataset.record_spec  # noqa: B018 -- validates the features against seq_len
    except ValueError as err:
        raise manifest_lib.ManifestError(f"{dataset.manifest_path}: {err}") from err
    report = Report()
    report.problems += check_consistency(dataset.doc)
    report.problems += check_side_files(dataset)
    for shard, path in zip(dataset.shards, dataset.shard_paths()):
        problems, frames = check_shard(path, shard, deep=_DeepCheck(dataset) if deep else None)
        report.shards += 1
        report.records += frames
        report.problems += problems
    report.notes += [f"{path}: not listed in the manifest (leftover of another run?)"
                     for path in unlisted_files(dataset)]
    return report


def iter_record_batches(dataset: manifest_lib.Dataset, path: str, *, batch: int = 512):
    """Parsed records of one shard as numpy arrays (read through fsspec, parsed by TF)."""
    spec = dataset.record_spec
    fs, stripped = storage.filesystem(path)
    payloads = []
    with fs.open(stripped, "rb") as handle:
        for payload in iter_tfrecord_frames(handle):
            payloads.append(payload)
            if len(payloads) == batch:
                yield parse_payloads(payloads, spec)
                payloads = []
    if payloads:
        yield parse_payloads(payloads, spec)


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
    except (manifest_lib.ManifestError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"NOTE {note}")
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    status = "OK" if report.ok else f"{len(report.problems)} PROBLEM(S)"
    print(f"{status}: {report.shards} shards, {report.records} records checked"
          f"{' (deep)' if args.deep else ''}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
