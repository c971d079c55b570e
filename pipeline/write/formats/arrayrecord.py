"""The ``arrayrecord`` format (``--formats=...,arrayrecord``): ArrayRecord files beside the
TFRecord shards, for Grain.

A format built from records (``pipeline.write.formats.base``): each file mirrors one shard
(``schemas.arrayrecord``): the shard's assembler (``pipeline.write.shards``) hands every window
of framed records it writes to an ``ArrayRecordSink`` too (``ArrayRecordFormat.shard_sink``),
which writes each frame's payload as one record. No extra read of the
parts, and the file holds the shard's records in the shard's order on any runner.

ArrayRecord's writer is C++ and writes a local path: the file is written to a temporary local
file and committed as ``common.storage.atomic_open`` commits a shard: renamed into place on
local and mounted file systems (the temporary file sits beside it, named with
``storage.TMP_MARKER``), uploaded on object stores (``s3://``, ``gs://``: the object appears
only when complete). Never a partial file under the final name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import posixpath
import re
import tempfile
import uuid

from common import storage
from common.errors import ConfigError, DataError
from pipeline.write.formats.base import RECORDS, FormatFile, OutputFormat, entries
from pipeline.write.shard_plan import ShardPlan
from schemas import arrayrecord
from schemas.claim import NO_FENCE, Fence
from schemas.formats import ARRAYRECORD
from schemas.record_frames import FOOTER_BYTES, HEADER_BYTES
from schemas.records import frame_bytes

_BLOCK = 1 << 20


@dataclasses.dataclass(frozen=True)
class ArrayRecordFile(FormatFile):
    """One committed ArrayRecord file, as the manifest lists it."""

    format = ARRAYRECORD

    path: str  # relative to the dataset directory
    bytes: int
    sha256: str
    records: int
    shard: str  # the TFRecord shard it mirrors

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def payloads(frames, *, frame_bytes: int):
    """The payloads (serialized ``tf.train.Example``s) of concatenated TFRecord frames of
    ``frame_bytes`` each."""
    if len(frames) % frame_bytes:
        raise ValueError(f"{len(frames)} bytes are not whole frames of {frame_bytes} bytes")
    view = memoryview(frames)
    for at in range(0, len(view), frame_bytes):
        yield bytes(view[at + HEADER_BYTES:at + frame_bytes - FOOTER_BYTES])


class ArrayRecordSink:
    """Writes one shard's ArrayRecord file from the frames written to the shard.

    A context manager: ``write(frames)`` any number of times, then on a clean exit the file is
    committed and ``info`` set; on an exception nothing is left.
    """

    def __init__(self, *, directory: str, shard: str, records: int, frame_bytes: int,
                 fence: Fence = NO_FENCE):
        self._relative = file_name = arrayrecord.file_name(shard)
        self._before_commit = fence.for_file(file_name)
        self._final = storage.join(directory, file_name)
        self._shard = shard
        self._records = records
        self._frame_bytes = frame_bytes
        self._written = 0
        self._writer = None
        self._tmp = ""
        self.info: ArrayRecordFile | None = None

    def __enter__(self):
        from array_record.python.array_record_module import ArrayRecordWriter  # the extra

        fs, stripped = storage.filesystem(self._final)
        self._local = storage.is_local(fs)
        if self._local:  # beside the final file: the rename is atomic
            os.makedirs(posixpath.dirname(stripped) or ".", exist_ok=True)
            name = f"{storage.TMP_MARKER}{uuid.uuid4().hex}-{posixpath.basename(stripped)}"
            self._tmp = posixpath.join(posixpath.dirname(stripped), name)
        else:
            handle, self._tmp = tempfile.mkstemp(suffix=arrayrecord.SUFFIX)
            os.close(handle)
        self._writer = ArrayRecordWriter(self._tmp, arrayrecord.WRITER_OPTIONS)
        if not self._writer.ok():
            self._remove()
            raise OSError(f"cannot write an ArrayRecord file at {self._tmp} (for {self._final})")
        return self

    def write(self, frames) -> None:
        for payload in payloads(frames, frame_bytes=self._frame_bytes):
            self._writer.write(payload)
            self._written += 1

    def __exit__(self, exc_type, exc, traceback):
        try:
            self._writer.close()
            if exc_type is None:
                self.info = self._commit()
        finally:
            self._remove()

    def _commit(self) -> ArrayRecordFile:
        if self._written != self._records:
            raise DataError(f"{self._final}: {self._written} records written, its shard "
                            f"{self._shard} has {self._records}; rerun")
        digest, size = hashlib.sha256(), 0
        with open(self._tmp, "rb") as source:
            if self._local:
                for block in iter(lambda: source.read(_BLOCK), b""):
                    digest.update(block)
                    size += len(block)
            else:
                with storage.atomic_open(self._final, "wb",
                                         before_commit=self._before_commit) as out:
                    for block in iter(lambda: source.read(_BLOCK), b""):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        if self._local:
            if self._before_commit is not None:
                self._before_commit()
            os.replace(self._tmp, storage.filesystem(self._final)[1])
        return ArrayRecordFile(path=self._relative, bytes=size, sha256=digest.hexdigest(),
                               records=self._written, shard=self._shard)

    def _remove(self) -> None:
        if self._tmp and os.path.exists(self._tmp):
            os.remove(self._tmp)


@dataclasses.dataclass(frozen=True)
class ArrayRecordFormat(OutputFormat):
    """``arrayrecord``: each shard's records, as the shard is written, in one file beside it."""

    name = ARRAYRECORD
    built_from = RECORDS

    def __post_init__(self):
        # Set up when the graph is built, before any work: the C++ writer is an extra.
        try:
            import array_record.python.array_record_module  # noqa: F401
        except ImportError as err:
            raise ConfigError(f"--formats=...,arrayrecord needs the array_record package "
                              f"({err}): pip install 'pilepack[arrayrecord]'") from err

    @classmethod
    def file_pattern(cls, numbered: str) -> str:
        return rf"{numbered}{re.escape(arrayrecord.SUFFIX)}"  # schemas.arrayrecord.file_name

    @classmethod
    def listed_entries(cls, doc: dict) -> list[dict]:
        return entries((doc.get(ARRAYRECORD) or {}).get("files"))

    @classmethod
    def manifest_section(cls, files: list, *, shards: list, vocab_size: int) -> dict:
        """The writer options and every file (``ArrayRecordFile``), by path.

        Raises:
          DataError: a shard without its file (lost between its writer and the manifest).
        """
        unmatched = {s.path for s in shards} ^ {f.shard for f in files}
        if unmatched or len(files) != len(shards):
            raise DataError(f"{len(shards)} shards but {len(files)} ArrayRecord files reported "
                            f"(unmatched: {', '.join(sorted(unmatched)) or 'none'}); a file was "
                            "lost or reported twice before the manifest: rerun the same command")
        return {ARRAYRECORD: {
            "group_size": arrayrecord.GROUP_SIZE, "options": arrayrecord.WRITER_OPTIONS,
            "record": "the shard's record at the same index: a serialized tf.train.Example",
            "files": [f.to_json() for f in sorted(files, key=lambda f: f.path)]}}

    def shard_sink(self, plan: ShardPlan) -> ArrayRecordSink:
        return ArrayRecordSink(directory=self.context.directory, shard=plan.name,
                               records=plan.records, frame_bytes=frame_bytes(self.context.record),
                               fence=self.context.fence)
