"""The ArrayRecord copy of a split (``--formats=...,arrayrecord``), defined once for the writer
and every reader: file names, writer options, and decoding a record with numpy alone.

Each ArrayRecord file mirrors one TFRecord shard: the same records, in the same order (a
``--shuffle=global`` order included), each the same serialized ``tf.train.Example`` bytes as
the TFRecord frame's payload (``schemas.records``). So one record spec parses both formats,
``tf.io.parse_example`` works on either, and equality with the TFRecord shards is a byte
comparison. The Example wrapper costs a few dozen bytes a record (<1% at ``seq_len`` 2048).

Writer options (``WRITER_OPTIONS``):

- ``group_size:1``: every record is its own chunk, so a random read (Grain's global shuffle
  reads record ``i`` of any file) decompresses that record only, not a group of neighbours.
- ``zstd:3``: token ids stored as uint16 compress by about a quarter at this level (a group of
  one record still does); decompressing 4 KiB is microseconds beside a reader's per-record cost.
- ``max_parallelism:1``: the writer encodes in the calling thread; the pipeline already runs
  one writer per worker thread, and the file's bytes do not depend on a thread pool.
"""

from __future__ import annotations

import numpy as np

from schemas.record_frames import (
    FOOTER_BYTES,
    HEADER_BYTES,
    FrameError,
    decode_frames,
    frame_layout,
)
from schemas.records import RecordSpec

SUFFIX = ".array_record"
GROUP_SIZE = 1
WRITER_OPTIONS = f"group_size:{GROUP_SIZE},zstd:3,max_parallelism:1"


def file_name(shard: str) -> str:
    """The ArrayRecord file of a TFRecord shard: ``train-00000-of-00004.tfrecord`` ->
    ``train-00000-of-00004.array_record`` (beside it)."""
    stem = shard[:-len(".tfrecord")] if shard.endswith(".tfrecord") else shard
    return stem + SUFFIX


def decode_records(records, spec: RecordSpec) -> dict[str, np.ndarray]:
    """ArrayRecord records (serialized ``tf.train.Example``s of ``spec``) -> feature name ->
    int32 [n, seq_len + 1], with numpy only; every protobuf byte is checked against the spec.

    Raises:
      FrameError: a record that is not a record of ``spec``.
    """
    layout = frame_layout(spec)
    size = layout.frame_bytes - HEADER_BYTES - FOOTER_BYTES
    for i, record in enumerate(records):
        if len(record) != size:
            raise FrameError(f"record {i} has {len(record)} bytes, a record of {spec} has {size}"
                             " (a file of another dataset?)")
    frames = np.tile(layout.template, (len(records), 1))
    frames[:, HEADER_BYTES:layout.frame_bytes - FOOTER_BYTES] = np.frombuffer(
        b"".join(records), dtype=np.uint8).reshape(len(records), size)
    return decode_frames(frames, layout, verify_crc=False)  # ArrayRecord checksums its chunks


def decode_record(record: bytes, spec: RecordSpec) -> dict[str, np.ndarray]:
    """One record -> feature name -> int32 [seq_len + 1] (for a Grain ``map``)."""
    return {name: values[0] for name, values in decode_records([record], spec).items()}
