"""schemas/arrayrecord.py: file names, and numpy decoding of a record equal to TensorFlow's."""

import numpy as np
import pytest

from schemas.arrayrecord import decode_record, decode_records, file_name
from schemas.record_frames import FrameError
from schemas.records import RecordSpec, serialize_example


def test_file_name_mirrors_the_shard():
    assert file_name("train-00000-of-00004.tfrecord") == "train-00000-of-00004.array_record"


@pytest.mark.parametrize("with_segments", [False, True])
def test_decode_records_returns_the_serialized_values(with_segments):
    spec = RecordSpec(seq_len=3, token_dtype="uint16", with_segments=with_segments)
    rows = [{name: np.array([i, 7, 65535, 1], dtype=dtype)
             for name, dtype in spec.feature_dtypes().items()} for i in range(3)]
    decoded = decode_records([serialize_example(row, spec) for row in rows], spec)
    assert sorted(decoded) == sorted(spec.feature_dtypes())
    for name in decoded:
        np.testing.assert_array_equal(decoded[name], np.stack([row[name] for row in rows]))
        assert decoded[name].dtype == np.int32
    one = decode_record(serialize_example(rows[2], spec), spec)
    np.testing.assert_array_equal(one["tokens"], [2, 7, 65535, 1])


def test_decode_refuses_a_record_of_another_spec():
    spec = RecordSpec(seq_len=3, token_dtype="uint16")
    other = RecordSpec(seq_len=4, token_dtype="uint16")
    with pytest.raises(FrameError, match="record 0 has"):
        decode_records([serialize_example({"tokens": np.zeros(5, np.uint16)}, other)], spec)
    renamed = serialize_example({"tokens": np.zeros(4, np.uint16)}, spec).replace(
        b"tokens", b"tokenz")
    with pytest.raises(FrameError, match="not a record of"):
        decode_records([renamed], spec)
