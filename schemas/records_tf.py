"""TensorFlow parsing of the record format in ``schemas/records.py`` (trainer side)."""

from __future__ import annotations

import tensorflow as tf

from schemas.records import RecordSpec


def feature_description(spec: RecordSpec) -> dict:
    return {name: tf.io.FixedLenFeature([], tf.string) for name in spec.feature_dtypes()}


def parse_records(serialized: tf.Tensor, spec: RecordSpec) -> dict[str, tf.Tensor]:
    """Parse a batch (or a scalar) of serialized records into int32 tensors [..., seq_len+1]."""
    parse = tf.io.parse_example if serialized.shape.rank else tf.io.parse_single_example
    raw = parse(serialized, feature_description(spec))
    out = {}
    for name, dtype in spec.feature_dtypes().items():
        values = tf.io.decode_raw(raw[name], getattr(tf, dtype), little_endian=True)
        values = tf.ensure_shape(values, list(serialized.shape) + [spec.record_len])
        out[name] = tf.cast(values, tf.int32)
    return out
