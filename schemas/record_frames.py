"""Random access to framed records: where each feature's values sit inside one TFRecord frame.

Every record of a spec has the same framed size (``records.frame_bytes``), so record ``i`` of
a shard starts at byte ``i * frame_bytes``, and inside a frame each feature's values start at
a fixed byte. ``frame_layout`` reads that layout off the writer's own output
(``records.frame_examples`` of records that differ in one feature only), so it cannot drift
from the writer; ``decode_frames`` turns a ``[n, frame_bytes]`` byte matrix back into the
features, checking every constant byte (lengths, protobuf tags, feature names) and, as
TensorFlow's TFRecord reader does, both CRCs.

Worked example: ``RecordSpec(seq_len=3, token_dtype="uint16")`` frames a record in 42 bytes:
a 12-byte header (length and its CRC), a 26-byte ``tf.train.Example`` whose tokens are bytes
[30, 38) of the frame (4 uint16 values), and the payload's 4-byte CRC.
"""

from __future__ import annotations

import dataclasses
import functools

import google_crc32c
import numpy as np

from common.errors import PilepackError
from schemas.records import RecordSpec, frame_examples

HEADER_BYTES = 12  # u64 length + u32 masked CRC of the length
FOOTER_BYTES = 4  # u32 masked CRC of the payload
_MARK = {"uint16": 0x0101, "int32": 0x01010101}  # every byte of every value differs from 0


class FrameError(PilepackError, ValueError):
    """Bytes read at a record's computed offset are not a record of the dataset's spec."""


@dataclasses.dataclass(frozen=True)
class FrameLayout:
    """The byte layout of one framed record of ``spec``.

    Attributes:
        spec: the record spec.
        frame_bytes: bytes of one framed record.
        values: feature name -> (first byte, end byte) of its values inside the frame.
        template: the frame of an all-zero record (uint8 [frame_bytes]).
        constant: the [start, end) runs of bytes that are the same in every record: all but
            the values and the payload's CRC.
    """

    spec: RecordSpec
    frame_bytes: int
    values: dict
    template: np.ndarray
    constant: tuple[tuple[int, int], ...]


def _frame(spec: RecordSpec, marked: str | None) -> np.ndarray:
    """One framed record, all zeros but ``marked``'s values (uint8 [frame_bytes])."""
    features = {name: np.zeros((1, spec.record_len), dtype=dtype)
                for name, dtype in spec.feature_dtypes().items()}
    if marked is not None:
        features[marked][:] = _MARK[spec.feature_dtypes()[marked]]
    return np.frombuffer(frame_examples(features, spec), dtype=np.uint8)


@functools.lru_cache(maxsize=16)
def frame_layout(spec: RecordSpec) -> FrameLayout:
    """The layout of ``spec``'s frames, read off the writer's output (see the module doc)."""
    template = _frame(spec, None)
    size = len(template)
    constant = np.ones(size, dtype=bool)
    constant[size - FOOTER_BYTES:] = False
    values = {}
    for name, dtype in spec.feature_dtypes().items():
        payload_end = size - FOOTER_BYTES
        differs = np.flatnonzero(_frame(spec, name)[:payload_end] != template[:payload_end])
        start, end = int(differs[0]), int(differs[-1]) + 1
        # Internal invariant: the writer stores each feature's values as one run of bytes.
        assert end - start == spec.record_len * np.dtype(dtype).itemsize == len(differs)
        values[name] = (start, end)
        constant[start:end] = False
    return FrameLayout(spec=spec, frame_bytes=size, values=values, template=template,
                       constant=tuple(_spans(constant)))


def _spans(mask: np.ndarray) -> list[tuple[int, int]]:
    """The [start, end) runs of True in a bool vector."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


def masked_crcs(rows) -> np.ndarray:
    """The TFRecord (masked CRC32C) checksum of each row of a uint8 matrix, uint32 [n]."""
    crc = np.fromiter((google_crc32c.value(row) for row in rows), dtype=np.uint64,
                      count=len(rows))
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF  # records._masked_crc


def _check(frames: np.ndarray, layout: FrameLayout, *, verify_crc: bool, where) -> None:
    """FrameError naming the first bad row's record (``where(row)``) unless every frame is a
    record of ``layout``: constant bytes as written, and (``verify_crc``) both CRCs right."""
    bad = np.zeros(len(frames), dtype=bool)
    for start, end in layout.constant:
        bad |= (frames[:, start:end] != layout.template[start:end]).any(axis=1)
    if bad.any():
        raise FrameError(f"{where(int(np.argmax(bad)))}: the bytes at its computed offset are "
                         f"not a record of {layout.spec} (a shard of another writer or a "
                         "corrupt copy); recopy the dataset or read it with --order=files")
    if not verify_crc:
        return
    end = layout.frame_bytes - FOOTER_BYTES  # the header's CRC is a constant byte, checked above
    stored = np.ascontiguousarray(frames[:, end:]).view("<u4")[:, 0]
    wrong = masked_crcs(frames[:, HEADER_BYTES:end]) != stored
    if wrong.any():
        raise FrameError(f"{where(int(np.argmax(wrong)))}: TFRecord data checksum mismatch (a "
                         "corrupt shard); recopy or rebuild the dataset")


def decode_frames(
    frames: np.ndarray, layout: FrameLayout, *, verify_crc: bool = True, where=None
) -> dict[str, np.ndarray]:
    """Framed records (uint8 [n, frame_bytes]) -> feature name -> int32 [n, record_len].

    ``where(row)`` names the record of a row for errors (default: "row N").
    """
    if frames.ndim != 2 or frames.shape[1] != layout.frame_bytes:
        raise ValueError(f"frames must be [n, {layout.frame_bytes}], got {frames.shape}")
    _check(frames, layout, verify_crc=verify_crc, where=where or (lambda row: f"row {row}"))
    out = {}
    for name, dtype in layout.spec.feature_dtypes().items():
        start, end = layout.values[name]
        little = np.dtype(dtype).newbyteorder("<")
        out[name] = np.ascontiguousarray(frames[:, start:end]).view(little).astype(np.int32)
    return out
