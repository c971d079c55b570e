"""schemas/megatron_index.py: the MMIDIDX layout, byte for byte, and its consistency checks."""

import struct

import numpy as np
import pytest

from schemas.megatron_index import (
    document_dtype,
    encode_index,
    index_problem,
    parse_index,
)


def test_worked_example_byte_for_byte():
    data = encode_index(np.array([3, 1]), dtype="uint16")
    assert len(data) == 82
    expected = (b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 8)
                + struct.pack("<Q", 2) + struct.pack("<Q", 3)
                + struct.pack("<2i", 3, 1) + struct.pack("<2q", 0, 6) + struct.pack("<3q", 0, 1, 2))
    assert data == expected
    index = parse_index(data)
    assert index.dtype == "uint16" and index.tokens == 4
    assert index.pointers.tolist() == [0, 6] and index.document_indices.tolist() == [0, 1, 2]
    assert index_problem(index, dtype="uint16", bin_bytes=8) is None


def test_int32_pointers_step_by_four_bytes():
    index = parse_index(encode_index(np.array([2, 5, 1]), dtype="int32"))
    assert index.dtype == "int32" and index.pointers.tolist() == [0, 8, 28]
    assert index_problem(index, dtype="int32", bin_bytes=32) is None


def test_dtype_follows_megatron_optimal_dtype():
    assert document_dtype(300) == "uint16" and document_dtype(65499) == "uint16"
    assert document_dtype(65500) == "int32" and document_dtype(128000) == "int32"


def test_empty_index():
    index = parse_index(encode_index(np.zeros(0, np.int32), dtype="uint16"))
    assert index.tokens == 0 and index.document_indices.tolist() == [0]


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"XXIDIDX\x00\x00" + d[9:], "not a Megatron index"),
    (lambda d: d[:9] + struct.pack("<Q", 2) + d[17:], "index version 2"),
    (lambda d: d[:-1], "bytes, but 2 sequences"),
    (lambda d: d[:17] + bytes([99]) + d[18:], "unknown dtype code 99"),
])
def test_damaged_index_is_refused(damage, message):
    data = encode_index(np.array([3, 1]), dtype="uint16")
    with pytest.raises(ValueError, match=message):
        parse_index(damage(data))


def test_inconsistencies_are_named():
    index = parse_index(encode_index(np.array([3, 1]), dtype="uint16"))
    assert "dtype uint16, the manifest says int32" in index_problem(index, dtype="int32",
                                                                      bin_bytes=8)
    assert "the .bin has 10" in index_problem(index, dtype="uint16", bin_bytes=10)
    data = bytearray(encode_index(np.array([3, 1]), dtype="uint16"))
    data[50:58] = struct.pack("<q", 4)  # the second pointer
    assert "pointers" in index_problem(parse_index(bytes(data)), dtype="uint16", bin_bytes=8)
