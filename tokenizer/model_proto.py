"""Read the few ``ModelProto`` fields CachedEncoder needs, straight from the wire format.

``sentencepiece.sentencepiece_model_pb2`` is generated for a newer protobuf than the one this
project pins and cannot be imported, so this module decodes the handful of scalar fields itself
(field numbers from ``sentencepiece_model.proto``). Unknown fields are skipped, as protobuf does.
"""

from __future__ import annotations

import dataclasses

# ModelProto
_PIECES = 1
_TRAINER_SPEC = 2
_NORMALIZER_SPEC = 3
# TrainerSpec
_MODEL_TYPE = 3
_TREAT_WHITESPACE_AS_SUFFIX = 24
_BYTE_FALLBACK = 35
# NormalizerSpec
_NAME = 1
_PRECOMPILED_CHARSMAP = 2
_ADD_DUMMY_PREFIX = 3
_REMOVE_EXTRA_WHITESPACES = 4
_ESCAPE_WHITESPACES = 5

# ModelProto.SentencePiece
_PIECE_TYPE = 3

MODEL_TYPE_NAMES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
# ModelProto.SentencePiece.Type
PIECE_TYPE_NAMES = {1: "normal", 2: "unknown", 3: "control", 4: "user-defined", 5: "unused",
                    6: "byte"}


@dataclasses.dataclass(frozen=True)
class ModelFacts:
    """What a serialized SentencePiece model says about how it encodes (proto defaults apply)."""

    model_type: str = "unigram"
    treat_whitespace_as_suffix: bool = False
    byte_fallback: bool = False
    normalizer_name: str = ""
    precompiled_charsmap_size: int = 0
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint in SentencePiece model proto")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes) -> dict[int, int | bytes]:
    """Last value of each field number (protobuf's rule for repeated scalars)."""
    return dict(_iter_fields(buf))


def _model_fields(model_proto: bytes) -> dict[int, int | bytes]:
    """``_fields`` of a ModelProto less its pieces, which it steps over without decoding them
    (a 32,000-piece model's pieces are ~96% of its fields: ~15 ms of each encoder's load)."""
    # A piece under 128 bytes (all but pathological ones) is key 0x0a, a one-byte length and
    # the piece: skip those here; anything else goes through the general decoder below.
    pos, end = 0, len(model_proto)
    while pos + 1 < end and model_proto[pos] == 0x0A and model_proto[pos + 1] < 0x80:
        pos += 2 + model_proto[pos + 1]
    if pos > end:
        raise ValueError("truncated SentencePiece model proto")
    return {number: value for number, value in _iter_fields(model_proto[pos:])
            if number != _PIECES}


def _iter_fields(buf: bytes):
    """(field number, value) of every field, in order (repeated fields once per value)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire_type == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ValueError("truncated SentencePiece model proto")
            yield number, buf[pos : pos + length]
            pos += length
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type} in SentencePiece model proto")
        if pos > len(buf):
            raise ValueError("truncated SentencePiece model proto")


def read_model_facts(model_proto: bytes) -> ModelFacts:
    """Decode model type, byte fallback and normalizer settings from a serialized model."""
    top = _model_fields(model_proto)
    trainer = _fields(bytes(top.get(_TRAINER_SPEC, b"")))
    normalizer = _fields(bytes(top.get(_NORMALIZER_SPEC, b"")))
    default = ModelFacts()
    model_type = trainer.get(_MODEL_TYPE, 1)
    return ModelFacts(
        model_type=MODEL_TYPE_NAMES.get(model_type, f"unknown({model_type})"),
        treat_whitespace_as_suffix=bool(
            trainer.get(_TREAT_WHITESPACE_AS_SUFFIX, default.treat_whitespace_as_suffix)
        ),
        byte_fallback=bool(trainer.get(_BYTE_FALLBACK, default.byte_fallback)),
        normalizer_name=bytes(normalizer.get(_NAME, b"")).decode("utf-8", "replace"),
        precompiled_charsmap_size=len(bytes(normalizer.get(_PRECOMPILED_CHARSMAP, b""))),
        add_dummy_prefix=bool(normalizer.get(_ADD_DUMMY_PREFIX, default.add_dummy_prefix)),
        remove_extra_whitespaces=bool(
            normalizer.get(_REMOVE_EXTRA_WHITESPACES, default.remove_extra_whitespaces)
        ),
        escape_whitespaces=bool(normalizer.get(_ESCAPE_WHITESPACES, default.escape_whitespaces)),
    )


def read_piece_types(model_proto: bytes) -> list[str]:
    """The type of every piece, in id order ("normal", "control", "user-defined", ...)."""
    return [PIECE_TYPE_NAMES.get(_piece_type(bytes(piece)), "unknown-type")
            for number, piece in _iter_fields(model_proto) if number == _PIECES]


def _piece_type(piece: bytes) -> int:
    # SentencePiece writes piece (1), score (2, fixed32), then type (3) only if not NORMAL:
    # read that layout directly, anything else through the general decoder.
    if piece[:1] == b"\x0a" and piece[1] < 0x80:
        end = 2 + piece[1]
        if piece[end : end + 1] == b"\x15":
            rest = piece[end + 5 :]
            if not rest:
                return 1
            if len(rest) == 2 and rest[0] == 0x18 and rest[1] < 0x80:
                return rest[1]
    return _fields(piece).get(_PIECE_TYPE, 1)
