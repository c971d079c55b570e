"""Stage 4, Write: packed records -> TFRecord shards of ~``shard_bytes``, committed atomically.

Each input file has its own writer, so shard names and contents are a pure function of the
input file and the options (``{split}-{file:05d}-{shard:05d}.tfrecord``): a rerun, or a runner
retrying a bundle, rewrites identical bytes. A shard rolls over before the record that would
take it past ``shard_bytes``, so every shard but the last of each writer is within one record
of the target. A shard becomes visible only once complete (see ``common.storage``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from common import storage
from schemas.records import TOKENS, RecordSpec, frame_tfrecord, serialize_example


def shard_name(*, split: str, file_index: int, shard_index: int) -> str:
    return f"{split}-{file_index:05d}-{shard_index:05d}.tfrecord"


@dataclasses.dataclass(frozen=True)
class ShardInfo:
    path: str  # relative to the dataset directory
    bytes: int
    sha256: str
    records: int
    tokens: int
    padding_tokens: int
    input_file: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def serialize_records(features: dict, spec: RecordSpec, *, pad_id: int):
    """Yield (framed TFRecord bytes, real labels, padding tokens) per record."""
    tokens = features[TOKENS]
    pads = (tokens == pad_id).sum(axis=1)
    for i in range(len(tokens)):
        payload = serialize_example({name: values[i] for name, values in features.items()}, spec)
        padding = int(pads[i])
        yield frame_tfrecord(payload), spec.seq_len - padding, padding


class ShardWriter:
    """Rolls shards of one input file over by size; hashes while writing."""

    def __init__(self, *, directory: str, split: str, file_index: int, shard_bytes: int):
        self._directory = directory
        self._split = split
        self._file_index = file_index
        self._shard_bytes = shard_bytes
        self._shard_index = 0
        self._stack = None
        self._handle = None
        self.finished: list[ShardInfo] = []

    def _open(self):
        name = shard_name(split=self._split, file_index=self._file_index,
                          shard_index=self._shard_index)
        self._stack = contextlib.ExitStack()
        self._handle = self._stack.enter_context(
            storage.atomic_open(storage.join(self._directory, name), "wb")
        )
        self._name, self._bytes, self._records, self._tokens, self._padding = name, 0, 0, 0, 0
        self._hash = hashlib.sha256()

    def write(self, frame: bytes, *, tokens: int, padding: int) -> None:
        if self._handle is not None and self._records and (
            self._bytes + len(frame) > self._shard_bytes
        ):
            self.close()
        if self._handle is None:
            self._open()
        self._handle.write(frame)
        self._hash.update(frame)
        self._bytes += len(frame)
        self._records += 1
        self._tokens += tokens
        self._padding += padding

    def close(self) -> None:
        if self._handle is None:
            return
        self._stack.close()  # commits the shard (rename / upload completion)
        self.finished.append(ShardInfo(self._name, self._bytes, self._hash.hexdigest(),
                                       self._records, self._tokens, self._padding,
                                       self._file_index))
        self._handle = None
        self._shard_index += 1

    def abort(self) -> None:
        if self._handle is not None:
            self._stack.__exit__(RuntimeError, RuntimeError("aborted"), None)
            self._handle = None


class _WriteShardsFn(beam.DoFn):
    def __init__(self, *, directory: str, split: str, shard_bytes: int, spec: RecordSpec,
                 pad_id: int):
        self._directory = directory
        self._split = split
        self._shard_bytes = shard_bytes
        self._spec = spec
        self._pad_id = pad_id

    def start_bundle(self):
        self._writers: dict[int, ShardWriter] = {}

    def process(self, chunk):
        writer = self._writers.get(chunk.file_index)
        if writer is None:
            writer = self._writers[chunk.file_index] = ShardWriter(
                directory=self._directory, split=self._split, file_index=chunk.file_index,
                shard_bytes=self._shard_bytes,
            )
        for frame, tokens, padding in serialize_records(chunk.features, self._spec,
                                                        pad_id=self._pad_id):
            writer.write(frame, tokens=tokens, padding=padding)
        beam.metrics.Metrics.counter("write", "records").inc(len(chunk.features[TOKENS]))
        # Per-chunk statistics travel on to the manifest.
        yield beam.pvalue.TaggedOutput("chunk_stats", (chunk.stats, chunk.subsets))

    def finish_bundle(self):
        for writer in self._writers.values():
            writer.close()
            for info in writer.finished:
                yield WindowedValue(info, 0, [GlobalWindow()])
        self._writers = {}

    def teardown(self):
        for writer in getattr(self, "_writers", {}).values():
            writer.abort()


class WriteShards(beam.PTransform):
    """PCollection[PackedChunk] -> {main: ShardInfo, chunk_stats: (PackStats, subsets)}."""

    def __init__(self, *, directory: str, split: str, shard_bytes: int, spec: RecordSpec,
                 pad_id: int):
        super().__init__()
        self._fn = _WriteShardsFn(directory=directory, split=split, shard_bytes=shard_bytes,
                                  spec=spec, pad_id=pad_id)

    def expand(self, chunks):
        return chunks | "WriteTFRecords" >> beam.ParDo(self._fn).with_outputs(
            "chunk_stats", main="shards"
        )

