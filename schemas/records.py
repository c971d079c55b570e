"""The TFRecord record format, defined once for the shard writer and every reader.

Each record is a serialized ``tf.train.Example`` whose features are *raw little-endian
integer arrays stored as a single bytes value*:

=============  ===========================  ==========================================
feature        stored as                    meaning
=============  ===========================  ==========================================
``tokens``     bytes, ``seq_len + 1`` ints  token ids; ``pad_id`` only after the end of
                                            the real tokens of a padded final record
``segment_ids``  (optional) same length     1, 2, ... per document inside the record,
                                            0 on padding (``--segment_ids``)
``positions``  (optional) same length       position inside the document's segment
=============  ===========================  ==========================================

Why raw bytes rather than ``int64_list``: an ``int64_list`` is varint-encoded (2-3 bytes a
token for a 32k-50k vocabulary) and parsed element by element, while a bytes feature of
``uint16`` is exactly 2 bytes a token and is decoded by one ``tf.io.decode_raw`` memcpy.
``python -m bench.record_format_bench`` measures both.

A record holds ``seq_len + 1`` tokens so that ``inputs = tokens[:-1]`` and
``labels = tokens[1:]``; consecutive records of a packed chunk overlap by one token (see
``pipeline/write/pack.py``), so no label is lost between records.

This module must stay importable without TensorFlow (Beam workers do not need it); the
TensorFlow parsing helpers import it lazily.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Mapping

import numpy as np

TOKENS = "tokens"
SEGMENT_IDS = "segment_ids"
POSITIONS = "positions"
BYTE_ORDER = "little"

_MAX_UINT16 = 2**16 - 1
_MAX_INT32 = 2**31 - 1
# tf.io.decode_raw reads uint16 and int32 but not uint32, so larger vocabularies use int32.
DTYPES = ("uint16", "int32")


def token_dtype_for_vocab(vocab_size: int) -> str:
    """Smallest dtype that holds every id of a vocabulary: uint16 when it fits, else int32."""
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    if vocab_size - 1 <= _MAX_UINT16:
        return "uint16"
    if vocab_size - 1 <= _MAX_INT32:
        return "int32"
    raise ValueError(f"vocab_size {vocab_size} does not fit in int32 token ids")


def index_dtype_for_seq_len(seq_len: int) -> str:
    """dtype of segment ids and positions (values are at most seq_len + 1)."""
    return "uint16" if seq_len + 1 <= _MAX_UINT16 else "int32"


@dataclasses.dataclass(frozen=True)
class RecordSpec:
    """Shape and dtypes of one record; serialized into the manifest as ``features``."""

    seq_len: int
    token_dtype: str
    with_segments: bool = False

    def __post_init__(self):
        if self.seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {self.seq_len}")
        if self.token_dtype not in DTYPES:
            raise ValueError(f"token_dtype must be one of {DTYPES}, got {self.token_dtype!r}")

    @property
    def record_len(self) -> int:
        return self.seq_len + 1

    @property
    def index_dtype(self) -> str:
        return index_dtype_for_seq_len(self.seq_len)

    def feature_dtypes(self) -> dict[str, str]:
        dtypes = {TOKENS: self.token_dtype}
        if self.with_segments:
            dtypes[SEGMENT_IDS] = self.index_dtype
            dtypes[POSITIONS] = self.index_dtype
        return dtypes

    def to_manifest(self) -> dict:
        """The manifest's ``features`` block: enough to decode a record with plain TensorFlow."""
        return {
            name: {
                "encoding": "raw_bytes",
                "dtype": dtype,
                "byte_order": BYTE_ORDER,
                "shape": [self.record_len],
                "tf_parse": "tf.io.FixedLenFeature([], tf.string) then "
                f"tf.io.decode_raw(value, tf.{dtype}, little_endian=True)",
            }
            for name, dtype in self.feature_dtypes().items()
        }


# --- Serialization without TensorFlow --------------------------------------------------
# tf.train.Example is a tiny protobuf: Example{1: Features{1: map<string, Feature>}} and
# Feature{1: BytesList{1: repeated bytes}}. Encoding it by hand keeps TensorFlow out of the
# Beam workers and is ~10x faster than building proto objects; tests parse the result with
# tf.io.parse_single_example to prove it is the real format.


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    return _varint((field_number << 3) | 2) + _varint(len(payload)) + payload


def _bytes_feature_entry(name: str, value: bytes) -> bytes:
    bytes_list = _length_delimited(1, value)  # BytesList.value
    feature = _length_delimited(1, bytes_list)  # Feature.bytes_list
    entry = _length_delimited(1, name.encode()) + _length_delimited(2, feature)  # map entry
    return _length_delimited(1, entry)  # Features.feature


def serialize_example(arrays: Mapping[str, np.ndarray], spec: RecordSpec) -> bytes:
    """Serialize one record (feature name -> 1-D integer array) as a tf.train.Example."""
    features = b""
    for name in sorted(arrays):  # sorted: byte-identical output for identical input
        dtype = spec.feature_dtypes().get(name)
        if dtype is None:
            raise ValueError(f"feature {name!r} is not in the record spec {spec}")
        array = arrays[name]
        if array.shape != (spec.record_len,):
            raise ValueError(f"feature {name!r} has shape {array.shape}, want ({spec.record_len},)")
        little = np.dtype(dtype).newbyteorder("<")
        features += _bytes_feature_entry(name, array.astype(little, copy=False).tobytes())
    return _length_delimited(1, features)


def frame_examples(features: Mapping[str, np.ndarray], spec: RecordSpec) -> bytes:
    """Every row of ``features`` (name -> [records, record_len] array) serialized and framed:
    ``b"".join(frame_tfrecord(serialize_example(row)))``, built as one numpy byte matrix.

    Records of one spec all have the same protobuf layout and length, so only the values and
    each record's payload CRC differ: the constant bytes are computed once, the values copied
    in by column, and the CRC is one C call per record (no per-record Python serialization).
    """
    names = sorted(features)
    rows = {len(features[name]) for name in names}
    if len(rows) != 1:
        raise ValueError(f"features have different record counts: {sorted(rows)}")
    count = rows.pop()
    columns = []  # (constant prefix bytes, the feature's values as a [count, n] uint8 view)
    for name in names:
        dtype = spec.feature_dtypes().get(name)
        if dtype is None:
            raise ValueError(f"feature {name!r} is not in the record spec {spec}")
        array = features[name]
        if array.shape[1:] != (spec.record_len,):
            raise ValueError(f"feature {name!r} has shape {array.shape}, "
                             f"want (records, {spec.record_len})")
        values = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
        size = values.shape[1] * values.itemsize
        prefix = _bytes_feature_entry(name, bytes(size))[:-size]  # the value is its suffix
        columns.append((prefix, values.view(np.uint8).reshape(count, size)))
    body = sum(len(prefix) + values.shape[1] for prefix, values in columns)
    outer = _varint((1 << 3) | 2) + _varint(body)  # Example.features
    payload_len = len(outer) + body
    length = struct.pack("<Q", payload_len)
    header = length + struct.pack("<I", _masked_crc(length))  # the same for every record
    frame = np.empty((count, len(header) + payload_len + 4), dtype=np.uint8)
    at = 0
    for constant in (header, outer):
        frame[:, at:at + len(constant)] = np.frombuffer(constant, dtype=np.uint8)
        at += len(constant)
    for prefix, values in columns:
        frame[:, at:at + len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
        at += len(prefix)
        frame[:, at:at + values.shape[1]] = values
        at += values.shape[1]
    payloads = frame[:, len(header):at]
    crcs = np.fromiter((_masked_crc(row.tobytes()) for row in payloads), dtype="<u4", count=count)
    frame[:, at:] = crcs.view(np.uint8).reshape(count, 4)
    return frame.tobytes()


def decode_feature(value: bytes, dtype: str) -> np.ndarray:
    """Inverse of the bytes encoding for one feature (numpy, no TensorFlow)."""
    return np.frombuffer(value, dtype=np.dtype(dtype).newbyteorder("<"))


# --- TFRecord framing -------------------------------------------------------------------


def _masked_crc(data: bytes) -> int:
    import google_crc32c  # C implementation; imported here so the module loads without it

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_tfrecord(payload: bytes) -> bytes:
    """One TFRecord frame: len(u64) crc(len) payload crc(payload), little-endian."""
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", _masked_crc(length)) + payload + struct.pack(
        "<I", _masked_crc(payload)
    )


def iter_tfrecord_frames(stream, *, verify_crc: bool = True):
    """Yield payloads of a TFRecord byte stream; raise ValueError naming the bad offset."""
    offset = 0
    while True:
        header = stream.read(12)
        if not header:
            return
        if len(header) < 12:
            raise ValueError(f"truncated TFRecord header at byte {offset}")
        (length,) = struct.unpack("<Q", header[:8])
        if verify_crc and struct.unpack("<I", header[8:])[0] != _masked_crc(header[:8]):
            raise ValueError(f"TFRecord length checksum mismatch at byte {offset}")
        body = stream.read(length + 4)
        if len(body) < length + 4:
            raise ValueError(f"truncated TFRecord payload at byte {offset}")
        payload = body[:length]
        if verify_crc and struct.unpack("<I", body[length:])[0] != _masked_crc(payload):
            raise ValueError(f"TFRecord data checksum mismatch in the record at byte {offset}")
        offset += 12 + length + 4
        yield payload


def frame_bytes(spec: RecordSpec) -> int:
    """Bytes of one framed record of ``spec``: the same for every record, since each feature
    is a fixed number of fixed-size integers. Shard plans cut at multiples of it."""
    zeros = {name: np.zeros(spec.record_len, dtype=dtype)
             for name, dtype in spec.feature_dtypes().items()}
    return len(frame_tfrecord(serialize_example(zeros, spec)))
