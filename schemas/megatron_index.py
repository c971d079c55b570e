"""Megatron-Core's indexed dataset: the layout of its ``.idx`` file and its token dtype.

A dataset is a pair ``PREFIX.bin`` (every sequence's token ids, concatenated, little-endian,
no header) and ``PREFIX.idx`` (``MMIDIDX``, version 1), as ``IndexedDataset(PREFIX)`` of
``megatron.core.datasets.indexed_dataset`` reads it. The ``.idx``, all little-endian::

    b"MMIDIDX\\x00\\x00"           9 bytes
    version                      uint64 = 1
    dtype code                   uint8 (uint16 = 8, int32 = 4; DTYPE_CODES)
    sequence count S             uint64
    document count D             uint64: the length of the document indices (documents + 1)
    sequence lengths             int32[S], in tokens
    sequence pointers            int64[S], byte offsets into the .bin
    document indices             int64[D]: 0, then the sequence index ending each document

Here one document is one sequence (no sentence splitting, like ``preprocess_data.py`` without
``--split-sentences``), so the document indices are ``0, 1, ..., S``.

Worked example (tests assert it): lengths ``[3, 1]`` in uint16 -> pointers ``[0, 6]``, document
indices ``[0, 1, 2]``, an index of 9 + 8 + 1 + 8 + 8 + 2*4 + 2*8 + 3*8 = 82 bytes.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
BIN_SUFFIX = ".bin"
IDX_SUFFIX = ".idx"
# Megatron-Core's DType codes (only these two are written; the others are read to name them).
DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6,
               "float32": 7, "uint16": 8}
_CODE_NAMES = {code: name for name, code in DTYPE_CODES.items()}
_FIXED = struct.Struct("<9sQBQQ")  # header, version, dtype code, sequences, document indices


def document_dtype(vocab_size: int) -> str:
    """Megatron's choice for a vocabulary (``DType.optimal_dtype``): uint16 below 65,500."""
    return "uint16" if vocab_size < 65500 else "int32"


def encode_index(lengths: np.ndarray, *, dtype: str) -> bytes:
    """The ``.idx`` of sequences of ``lengths`` tokens of ``dtype``, one document each."""
    lengths = np.asarray(lengths, dtype="<i4")
    pointers = np.zeros(len(lengths), dtype="<i8")
    np.cumsum(lengths[:-1].astype("<i8") * np.dtype(dtype).itemsize, out=pointers[1:])
    documents = np.arange(len(lengths) + 1, dtype="<i8")
    return b"".join((_FIXED.pack(INDEX_HEADER, INDEX_VERSION, DTYPE_CODES[dtype], len(lengths),
                                 len(documents)),
                     lengths.tobytes(), pointers.tobytes(), documents.tobytes()))


@dataclasses.dataclass(frozen=True)
class MegatronIndex:
    dtype: str
    lengths: np.ndarray  # int32 [sequences]
    pointers: np.ndarray  # int64 [sequences]
    document_indices: np.ndarray  # int64 [documents + 1]

    @property
    def tokens(self) -> int:
        return int(self.lengths.sum(dtype=np.int64))


def parse_index(data: bytes) -> MegatronIndex:
    """Decode an ``.idx``; ValueError saying what is wrong with it."""
    if len(data) < _FIXED.size:
        raise ValueError(f"{len(data)} bytes: shorter than the index header ({_FIXED.size})")
    header, version, code, sequences, documents = _FIXED.unpack_from(data)
    if header != INDEX_HEADER:
        raise ValueError(f"not a Megatron index: starts with {header!r}, not {INDEX_HEADER!r}")
    if version != INDEX_VERSION:
        raise ValueError(f"index version {version}, expected {INDEX_VERSION}")
    if code not in _CODE_NAMES:
        raise ValueError(f"unknown dtype code {code}")
    expected = _FIXED.size + sequences * (4 + 8) + documents * 8
    if len(data) != expected:
        raise ValueError(f"{len(data)} bytes, but {sequences} sequences and {documents} document "
                         f"indices take {expected}")
    offset = _FIXED.size
    lengths = np.frombuffer(data, dtype="<i4", count=sequences, offset=offset)
    offset += lengths.nbytes
    pointers = np.frombuffer(data, dtype="<i8", count=sequences, offset=offset)
    offset += pointers.nbytes
    indices = np.frombuffer(data, dtype="<i8", count=documents, offset=offset)
    return MegatronIndex(dtype=_CODE_NAMES[code], lengths=lengths, pointers=pointers,
                         document_indices=indices)


def index_problem(index: MegatronIndex, *, dtype: str, bin_bytes: int) -> str | None:
    """None when the index is consistent with one document per sequence, ``dtype`` and a
    ``.bin`` of ``bin_bytes``; else the first inconsistency."""
    if index.dtype != dtype:
        return f"dtype {index.dtype}, the manifest says {dtype}"
    if not np.array_equal(index.document_indices, np.arange(len(index.lengths) + 1)):
        return "document indices are not 0, 1, ..., sequences (one document per sequence)"
    if len(index.lengths) and int(index.lengths.min()) < 1:
        return "a sequence of no tokens"
    size = np.dtype(dtype).itemsize
    expected = np.zeros(len(index.lengths), dtype=np.int64)
    np.cumsum(index.lengths[:-1].astype(np.int64) * size, out=expected[1:])
    if not np.array_equal(index.pointers, expected):
        return "sequence pointers are not the running sum of the sequences' bytes"
    if index.tokens * size != bin_bytes:
        return f"the sequences hold {index.tokens * size} bytes, the .bin has {bin_bytes}"
    return None
