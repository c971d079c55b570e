"""records.py: the hand-written tf.train.Example and TFRecord framing equal TensorFlow's, byte
for byte; dtype choices at their boundaries; RecordSpec validation."""

import io

import numpy as np
import pytest
import tensorflow as tf

from schemas.records import (
    POSITIONS,
    SEGMENT_IDS,
    TOKENS,
    RecordSpec,
    decode_feature,
    frame_examples,
    frame_tfrecord,
    index_dtype_for_seq_len,
    iter_tfrecord_frames,
    serialize_example,
    token_dtype_for_vocab,
)


def _arrays(spec: RecordSpec) -> dict[str, np.ndarray]:
    """Tokens that use every byte of their dtype (little-endian order shows), segments 1, 2."""
    top = 2**16 - 1 if spec.token_dtype == "uint16" else 2**31 - 1
    tokens = np.array([(i * 7919 + 1) % top for i in range(spec.record_len)], dtype=np.int64)
    tokens[0], tokens[-1] = top, 258
    arrays = {TOKENS: tokens}
    if spec.with_segments:
        cut = spec.record_len // 2
        arrays[SEGMENT_IDS] = np.array([1] * cut + [2] * (spec.record_len - cut))
        arrays[POSITIONS] = np.array(list(range(cut)) + list(range(spec.record_len - cut)))
    return arrays


def _tf_example(arrays, spec: RecordSpec) -> bytes:
    feature = {
        name: tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[arrays[name].astype(np.dtype(dtype).newbyteorder("<")).tobytes()]))
        for name, dtype in spec.feature_dtypes().items()
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString(deterministic=True)


SPECS = [
    RecordSpec(seq_len=7, token_dtype="uint16"),
    RecordSpec(seq_len=7, token_dtype="int32"),
    RecordSpec(seq_len=5, token_dtype="uint16", with_segments=True),
    RecordSpec(seq_len=300, token_dtype="int32", with_segments=True),  # 2-byte varint lengths
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.token_dtype}-{s.seq_len}-"
                         f"{'seg' if s.with_segments else 'noseg'}")
def test_serialize_example_equals_tensorflow_bytes(spec):
    arrays = _arrays(spec)
    assert serialize_example(arrays, spec) == _tf_example(arrays, spec)


def test_serialize_example_by_hand():
    # Example{features(1): Features{feature(1): entry{key(1): "tokens", value(2): Feature{
    # bytes_list(1): BytesList{value(1): 01 00 02 01}}}}}: each level is tag, length, payload.
    spec = RecordSpec(seq_len=1, token_dtype="uint16")
    got = serialize_example({TOKENS: np.array([1, 258])}, spec)
    assert got == b"\x0a\x14\x0a\x12\x0a\x06tokens\x12\x08\x0a\x06\x0a\x04\x01\x00\x02\x01"


def test_tensorflow_parses_it_back():
    spec = SPECS[2]
    arrays = _arrays(spec)
    parsed = tf.io.parse_single_example(
        serialize_example(arrays, spec),
        {name: tf.io.FixedLenFeature([], tf.string) for name in spec.feature_dtypes()})
    for name, dtype in spec.feature_dtypes().items():
        values = tf.io.decode_raw(parsed[name], getattr(tf, dtype), little_endian=True)
        np.testing.assert_array_equal(values.numpy(), arrays[name])
        np.testing.assert_array_equal(decode_feature(parsed[name].numpy(), dtype), arrays[name])


def test_serialize_example_refuses_unknown_features_and_wrong_shapes():
    spec = RecordSpec(seq_len=3, token_dtype="uint16")
    with pytest.raises(ValueError, match="'segment_ids' is not in the record spec"):
        serialize_example({TOKENS: np.zeros(4), SEGMENT_IDS: np.zeros(4)}, spec)
    with pytest.raises(ValueError, match=r"shape \(3,\), want \(4,\)"):
        serialize_example({TOKENS: np.zeros(3)}, spec)


PAYLOADS = [b"", b"a", b"x" * 300, serialize_example(_arrays(SPECS[0]), SPECS[0])]


def _tf_file(tmp_path, payloads) -> bytes:
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for payload in payloads:
            writer.write(payload)
    with open(path, "rb") as f:
        return f.read()


def test_frames_equal_tensorflow_writer_file(tmp_path):
    assert b"".join(frame_tfrecord(p) for p in PAYLOADS) == _tf_file(tmp_path, PAYLOADS)


def test_iter_frames_reads_tensorflow_file(tmp_path):
    data = _tf_file(tmp_path, PAYLOADS)
    assert list(iter_tfrecord_frames(io.BytesIO(data))) == PAYLOADS
    assert list(iter_tfrecord_frames(io.BytesIO(b""))) == []


def _framed() -> tuple[bytearray, int]:
    """Two frames, b"first" then b"second", and the byte offset of the second."""
    first, second = frame_tfrecord(b"first"), frame_tfrecord(b"second")
    return bytearray(first + second), len(first)  # 12 + 5 + 4 = 21


def _read(data) -> list[bytes]:
    return list(iter_tfrecord_frames(io.BytesIO(bytes(data))))


def test_payload_crc_mismatch_names_the_record_offset():
    data, second = _framed()
    assert second == 21
    data[second + 12] ^= 0x01  # first payload byte of the second record
    with pytest.raises(ValueError, match="data checksum mismatch in the record at byte 21"):
        _read(data)
    unchecked = list(iter_tfrecord_frames(io.BytesIO(bytes(data)), verify_crc=False))
    assert unchecked == [b"first", b"recond"]


def test_length_crc_mismatch_names_the_offset():
    data, second = _framed()
    data[second + 8] ^= 0x01  # the masked CRC of the second length
    with pytest.raises(ValueError, match="length checksum mismatch at byte 21"):
        _read(data)


@pytest.mark.parametrize("cut,message", [
    (21 + 5, "truncated TFRecord header at byte 21"),
    (21 + 12 + 6 + 3, "truncated TFRecord payload at byte 21"),  # CRC cut short
    (21 + 12 + 2, "truncated TFRecord payload at byte 21"),
])
def test_truncation_names_the_offset(cut, message):
    data, _ = _framed()
    with pytest.raises(ValueError, match=message):
        _read(data[:cut])


@pytest.mark.parametrize("vocab_size,dtype", [
    (1, "uint16"), (256, "uint16"), (65536, "uint16"),  # ids 0..65535 fit in uint16
    (65537, "int32"), (2**31, "int32"),  # id 2**31 - 1 is int32's largest
])
def test_token_dtype_for_vocab(vocab_size, dtype):
    assert token_dtype_for_vocab(vocab_size) == dtype


@pytest.mark.parametrize("vocab_size", [0, -1, 2**31 + 1])
def test_token_dtype_for_vocab_refuses(vocab_size):
    with pytest.raises(ValueError, match=str(vocab_size)):
        token_dtype_for_vocab(vocab_size)


def test_index_dtype_holds_seq_len_plus_one():
    assert index_dtype_for_seq_len(65534) == "uint16"
    assert index_dtype_for_seq_len(65535) == "int32"


def test_record_spec_layout():
    spec = RecordSpec(seq_len=4, token_dtype="int32", with_segments=True)
    assert spec.record_len == 5
    assert spec.feature_dtypes() == {TOKENS: "int32", SEGMENT_IDS: "uint16", POSITIONS: "uint16"}
    assert RecordSpec(seq_len=4, token_dtype="uint16").feature_dtypes() == {TOKENS: "uint16"}


@pytest.mark.parametrize("kwargs,message", [
    ({"seq_len": 0, "token_dtype": "uint16"}, "seq_len must be >= 1, got 0"),
    ({"seq_len": 4, "token_dtype": "uint32"}, "token_dtype must be one of .*'uint32'"),
    ({"seq_len": 4, "token_dtype": "int64"}, "token_dtype must be one of .*'int64'"),
])
def test_record_spec_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RecordSpec(**kwargs)


@pytest.mark.parametrize("spec", SPECS)
def test_frame_examples_equals_framing_each_record(spec):
    rng = np.random.default_rng(3)
    rows = 37
    features = {name: rng.integers(0, 60000, size=(rows, spec.record_len)).astype(dtype)
                for name, dtype in spec.feature_dtypes().items()}
    expected = b"".join(
        frame_tfrecord(serialize_example({name: f[i] for name, f in features.items()}, spec))
        for i in range(rows))
    assert frame_examples(features, spec) == expected
    assert frame_examples({name: f[:0] for name, f in features.items()}, spec) == b""
    with pytest.raises(ValueError, match="shape"):
        frame_examples({name: f[:, 1:] for name, f in features.items()}, spec)
