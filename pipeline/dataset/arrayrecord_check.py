"""The ArrayRecord files a manifest lists (``--formats=...,arrayrecord``), checked against it
and against the TFRecord shards they mirror: present, size, sha256, record count, and every
record equal to the shard's record at the same index (not for a shard that failed its own
check: that shard is the problem). For ``pipeline.verify`` and ``pipeline.roundtrip`` (whose
documents, decoded from the shards, are then the files' too).

ArrayRecord's reader is C++ and reads a local path: files on object stores are copied to a
temporary local file first.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import tempfile
from collections.abc import Collection

from common import storage
from common.errors import ConfigError
from pipeline.write.formats.arrayrecord import ArrayRecordFormat
from schemas import manifest as manifest_lib
from schemas.records import iter_tfrecord_frames

_BATCH = 256  # records compared per read
_BLOCK = 1 << 20


def listed_files(doc: dict) -> list[dict]:
    """The manifest's ArrayRecord file entries (none without the format)."""
    return ArrayRecordFormat.listed_entries(doc)


def check_files(dataset: manifest_lib.Dataset, *, bad_shards: Collection[str] = ()
                ) -> list[str]:
    """Problems of the dataset's ArrayRecord files, each named with its file. The files of
    ``bad_shards`` (shards whose own check failed, already reported) are checked against the
    manifest only, not record by record against their shard."""
    entries = listed_files(dataset.doc)
    if not entries:
        return []
    reader_class = _reader_class()
    shards = {shard["path"]: shard for shard in dataset.shards}
    problems = []
    missing = sorted(set(shards) - {entry["shard"] for entry in entries})
    if missing:
        problems.append(f"manifest: the shards {', '.join(missing)} have no ArrayRecord file "
                        "listed")
    for entry in entries:
        shard = shards.get(entry["shard"])
        if shard is None:
            problems.append(f"{entry['path']}: mirrors {entry['shard']}, which the manifest "
                            "does not list")
            continue
        try:
            problems += check_file(dataset.directory, entry, shard, reader_class=reader_class,
                                   compare=shard["path"] not in bad_shards)
        except OSError as err:
            problems.append(f"{entry['path']}: cannot be read: {type(err).__name__}: {err}")
        except (ValueError, IndexError) as err:  # its shard's framing, or a reader's range
            problems.append(f"{entry['path']}: cannot be compared with its shard "
                            f"{shard['path']}: {type(err).__name__}: {err}")
    return problems


def _reader_class():
    """ArrayRecord's reader, or a ConfigError naming the extra (the C++ package is optional)."""
    try:
        from array_record.python.array_record_module import ArrayRecordReader
    except ImportError as err:
        raise ConfigError(f"checking a dataset written with --formats=...,arrayrecord needs the "
                          f"array_record package ({err}): pip install 'pilepack[arrayrecord]'"
                          ) from err
    return ArrayRecordReader


def check_file(directory: str, entry: dict, shard: dict, *, reader_class,
               compare: bool = True) -> list[str]:
    """Problems of one ArrayRecord file: size, sha256, record count, and (``compare``) records
    against its shard's."""
    name = entry["path"]
    fs, stripped = storage.filesystem(storage.join(directory, name))
    if not fs.exists(stripped):
        return [f"{name}: missing"]
    with _local(fs, stripped) as local:
        size, sha256 = _hash(local)
        problems = []
        if size != entry["bytes"]:
            problems.append(f"{name}: {size} bytes, manifest says {entry['bytes']}")
        if sha256 != entry["sha256"]:
            problems.append(f"{name}: sha256 {sha256} does not match the manifest")
        if problems:
            return problems
        reader = reader_class(local)
        try:
            records = reader.num_records()
            if records != entry["records"] or records != shard["records"]:
                return [f"{name}: {records} records, the manifest says {entry['records']} and "
                        f"its shard {shard['path']} {shard['records']}"]
            if not compare:
                return []
            return _compare(reader, storage.join(directory, shard["path"]), name=name)
        finally:
            reader.close()


def _compare(reader, shard_path: str, *, name: str) -> list[str]:
    """The first record that differs from the shard's at its index, if any (up to the file's
    last record: a shard that holds more fails its own check)."""
    fs, stripped = storage.filesystem(shard_path)
    with fs.open(stripped, "rb") as handle:
        batch, first = [], 0
        for payload in itertools.islice(iter_tfrecord_frames(handle), reader.num_records()):
            batch.append(payload)
            if len(batch) == _BATCH:
                problem = _differs(reader, batch, first, name=name)
                if problem:
                    return [problem]
                first += len(batch)
                batch = []
        problem = _differs(reader, batch, first, name=name)
    return [problem] if problem else []


def _differs(reader, expected: list[bytes], first: int, *, name: str) -> str | None:
    if not expected:
        return None
    found = reader.read(first, first + len(expected))
    for i, (a, b) in enumerate(zip(found, expected)):
        if a != b:
            return (f"{name}: record {first + i} differs from its shard's (rebuild the dataset "
                    "with --formats=...,arrayrecord, or recopy it)")
    return None


def _hash(path: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


@contextlib.contextmanager
def _local(fs, stripped: str):
    """A local path holding the file: itself, or a temporary copy of an object."""
    if storage.is_local(fs):
        yield stripped
        return
    handle, tmp = tempfile.mkstemp(suffix=os.path.splitext(stripped)[1])
    os.close(handle)
    try:
        fs.get(stripped, tmp)
        yield tmp
    finally:
        os.remove(tmp)
