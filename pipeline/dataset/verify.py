"""``python -m pipeline.verify --manifest PATH [--deep]``: check a dataset end to end.

Checks the manifest (schema, version, safe relative paths, record spec, totals and accounting
that add up), the tokenizer file (present, sha256) and the dead-letter files (present, record
counts), then every shard in one streaming pass: present, size, sha256, TFRecord framing and
CRCs, record count; the extra formats' files, if any (``pipeline.dataset.format_checks``).
``--deep`` also parses every record with TensorFlow from the manifest's
feature spec alone and checks shapes, token ids against the vocabulary, and the shard's token
and padding counts. Every file is read through fsspec, so ``s3://`` datasets work like local
ones. Exit status 0 when clean, 1 when a problem was found (each named with its file), 2 when
the manifest itself cannot be used.
"""

from __future__ import annotations

import dataclasses
import hashlib

from common import storage
from pipeline.dataset import format_checks
from pipeline.dataset.reader import parse_payloads
from pipeline.quality import split_doc_hashes
from schemas import manifest as manifest_lib
from schemas.records import iter_tfrecord_frames
from tokenizer.spec import VOCAB_FILENAME

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
    if "filters" in doc:  # each document a rule removed has its filter record
        removed = doc["filters"]["documents_removed"]
        records = sum(f["records"] for f in doc["filters"]["records"])
        if records != removed:
            problems.append(f"manifest: the filters removed {removed} documents but "
                            f"{records} filter records are listed")
    return problems


def check_side_files(dataset: manifest_lib.Dataset) -> list[str]:
    """The tokenizer (sha256), the dead-letter files (record counts) and the document hash
    files (present, 16 bytes per hash, sha256)."""
    problems = []
    try:
        problem = dataset.tokenizer_file_problem()
        if problem:
            problems.append(problem)
        for entry in [*dataset.doc["dead_letters"],
                      *dataset.doc.get("filters", {}).get("records", [])]:
            fs, stripped = storage.filesystem(storage.join(dataset.directory, entry["path"]))
            if not fs.exists(stripped):
                problems.append(f"{entry['path']}: missing")
                continue
            with fs.open(stripped, "rb") as handle:
                lines = sum(1 for line in handle if line.strip())
            if lines != entry["records"]:
                problems.append(f"{entry['path']}: {lines} records, manifest says "
                                f"{entry['records']}")
        problems += split_doc_hashes.check_files(dataset.directory, dataset.doc)
    except OSError as err:
        problems.append(f"cannot read a file of the dataset: {type(err).__name__}: {err}")
    return problems


def unlisted_files(dataset: manifest_lib.Dataset) -> list[str]:
    """Files beside the manifest that it does not list (leftovers; harmless, but named)."""
    fs, root = storage.filesystem(dataset.directory)
    root = root.rstrip("/")
    listed = {shard["path"] for shard in dataset.shards}
    listed |= {d["path"] for d in dataset.doc["dead_letters"]}
    listed |= {f["path"] for f in dataset.doc.get("filters", {}).get("records", [])}
    listed |= {f["path"] for f in dataset.doc.get("doc_hashes", {}).get("files", [])}
    listed |= {manifest_lib.MANIFEST_NAME, dataset.tokenizer["file"], VOCAB_FILENAME}
    listed |= format_checks.listed_paths(dataset.doc)  # the extra formats' files
    try:
        found = [path[len(root) + 1:] for path in fs.find(root)]
    except OSError:
        return []
    return sorted(path for path in found if path not in listed)


def verify(manifest_path: str, *, deep: bool = False) -> Report:
    """Check a dataset; raises ManifestError when the manifest itself is unusable."""
    dataset = manifest_lib.load(manifest_path, check_files=False)  # checks the spec's copies
    report = Report()
    report.problems += check_consistency(dataset.doc)
    report.problems += check_side_files(dataset)
    bad_shards = set()
    for shard, path in zip(dataset.shards, dataset.shard_paths()):
        problems, frames = check_shard(path, shard, deep=_DeepCheck(dataset) if deep else None)
        report.shards += 1
        report.records += frames
        report.problems += problems
        if problems:
            bad_shards.add(shard["path"])
    report.problems += format_checks.verify_problems(dataset, bad_shards=bad_shards)
    report.notes += [f"{path}: not listed in the manifest (leftover of another run?)"
                     for path in unlisted_files(dataset)]
    return report
