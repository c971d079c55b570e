import pytest

from tokenizer.model_proto import read_model_facts, read_piece_types


def test_facts_of_a_lossless_model(model_bytes):
    facts = read_model_facts(model_bytes)
    assert facts.model_type == "bpe"
    assert facts.byte_fallback
    assert facts.normalizer_name == "identity"
    assert facts.precompiled_charsmap_size == 0
    assert not facts.add_dummy_prefix
    assert not facts.remove_extra_whitespaces
    assert facts.escape_whitespaces
    assert not facts.treat_whitespace_as_suffix


def test_facts_of_a_default_model(default_unigram_bytes):
    facts = read_model_facts(default_unigram_bytes)
    assert facts.model_type == "unigram"
    assert not facts.byte_fallback
    assert facts.normalizer_name == "nmt_nfkc"
    assert facts.precompiled_charsmap_size > 0
    assert facts.add_dummy_prefix and facts.remove_extra_whitespaces


def test_truncated_proto_is_refused(model_bytes):
    with pytest.raises(ValueError, match="truncated"):
        read_model_facts(model_bytes[: len(model_bytes) // 2])


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 1 << 14
    length = bytes([len(payload)]) if len(payload) < 0x80 else bytes(
        [0x80 | (len(payload) & 0x7F), len(payload) >> 7])
    return bytes([number << 3 | 2]) + length + payload


def _piece_bytes(text: str, kind: int = 1) -> bytes:
    # piece (1), score (2, fixed32), type (3) only if not NORMAL: SentencePiece's layout.
    return (_field(1, text.encode()) + b"\x15\x00\x00\x80\xbf"
            + (bytes([0x18, kind]) if kind != 1 else b""))


def test_facts_behind_long_pieces_and_other_layouts():
    long_piece = "▁" + "x" * 200  # over 127 bytes: a two-byte length
    scoreless = _field(1, b"ab")  # no score field: not the common layout
    trainer = bytes([0x18, 2, 0x98, 0x02, 1])  # model_type (3) bpe, byte_fallback (35) on
    model = b"".join([_field(1, _piece_bytes("<unk>", 2)), _field(1, _piece_bytes("<s>", 3)),
                      _field(1, _piece_bytes("▁a")), _field(1, _piece_bytes(long_piece)),
                      _field(1, scoreless), _field(1, _piece_bytes("<0x00>", 6)),
                      _field(2, trainer)])
    assert read_piece_types(model) == ["unknown", "control", "normal", "normal", "normal",
                                       "byte"]
    facts = read_model_facts(model)
    assert (facts.model_type, facts.byte_fallback) == ("bpe", True)
    with pytest.raises(ValueError, match="truncated"):
        read_model_facts(model[:5])
