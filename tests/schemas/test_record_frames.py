"""schemas/record_frames.py: the layout read off the writer decodes what the writer wrote."""

import numpy as np
import pytest

from schemas.record_frames import FrameError, decode_frames, frame_layout
from schemas.records import POSITIONS, SEGMENT_IDS, TOKENS, RecordSpec, frame_bytes, frame_examples


def test_the_docstring_example():
    layout = frame_layout(RecordSpec(seq_len=3, token_dtype="uint16"))
    assert (layout.frame_bytes, layout.values) == (42, {TOKENS: (30, 38)})
    assert layout.constant == ((0, 30),)  # then the values, then the payload's CRC


@pytest.mark.parametrize("spec", [
    RecordSpec(seq_len=5, token_dtype="int32"),
    RecordSpec(seq_len=300, token_dtype="uint16", with_segments=True),
])
def test_decode_inverts_the_writer(spec):
    rng = np.random.default_rng(0)
    high = {"uint16": 2**16, "int32": 2**31 - 1}
    features = {name: rng.integers(0, high[dtype], (3, spec.record_len))
                for name, dtype in spec.feature_dtypes().items()}
    layout = frame_layout(spec)
    assert layout.frame_bytes == frame_bytes(spec)
    frames = np.frombuffer(frame_examples(features, spec), np.uint8).reshape(3, -1)
    decoded = decode_frames(frames, layout)
    assert set(decoded) == set(features) and all(v.dtype == np.int32 for v in decoded.values())
    for name in features:
        np.testing.assert_array_equal(decoded[name], features[name])
    if spec.with_segments:
        assert set(layout.values) == {TOKENS, SEGMENT_IDS, POSITIONS}


def test_a_wrong_constant_byte_or_checksum_names_the_record():
    spec = RecordSpec(seq_len=3, token_dtype="uint16")
    layout = frame_layout(spec)
    tokens = np.arange(8).reshape(2, 4)
    frames = np.frombuffer(frame_examples({TOKENS: tokens}, spec), np.uint8).reshape(2, -1)
    names = lambda row: f"record {row + 10}"  # noqa: E731
    tag = frames.copy()
    tag[1, 20] ^= 1  # inside the feature's name
    with pytest.raises(FrameError, match="record 11: the bytes at its computed offset"):
        decode_frames(tag, layout, where=names)
    value = frames.copy()
    value[0, 31] ^= 1
    with pytest.raises(FrameError, match="record 10: TFRecord data checksum mismatch"):
        decode_frames(value, layout, where=names)
    np.testing.assert_array_equal(decode_frames(value, layout, verify_crc=False)[TOKENS][1],
                                  tokens[1])
