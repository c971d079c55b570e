"""The Megatron pairs a manifest lists (``--formats=...,megatron``): checked, and read back.

``pair_problems`` is ``pipeline.verify``'s check of each pair: both files present, sizes and
sha256 as listed, the ``.idx`` consistent (``schemas.megatron_index.index_problem``: dtype,
one document per sequence, pointers, the ``.bin``'s size), its documents and tokens as listed,
every token id inside the vocabulary. ``iter_documents`` reads the documents back in order (a
DataError naming the file when a pair cannot be read), and ``matching_records`` checks them,
in ``pipeline.roundtrip``, against the documents decoded from the TFRecord shards: each
Megatron document is the record stream's document followed by EOS (an unreadable pair: one
mismatch line).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np

from common import storage
from common.errors import DataError
from schemas import manifest as manifest_lib
from schemas.megatron_index import index_problem, parse_index

_BLOCK = 1 << 20


def _read_all(path: str) -> bytes:
    fs, stripped = storage.filesystem(path)
    with fs.open(stripped, "rb") as handle:
        return handle.read()


def _bin_problems(path: str, entry: dict, *, dtype: str, vocab_size: int) -> list[str]:
    """Size, sha256 and token ids of a ``.bin``, in one streaming pass."""
    fs, stripped = storage.filesystem(path)
    if not fs.exists(stripped):
        return [f"{entry['path']}: missing"]
    digest, size, largest = hashlib.sha256(), 0, -1
    little = np.dtype(dtype).newbyteorder("<")
    with fs.open(stripped, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK * little.itemsize), b""):
            digest.update(block)
            size += len(block)
            if len(block) % little.itemsize == 0:
                largest = max(largest, int(np.frombuffer(block, dtype=little).max()))
    problems = []
    if size != entry["bytes"]:
        problems.append(f"{entry['path']}: {size} bytes, manifest says {entry['bytes']}")
    if digest.hexdigest() != entry["sha256"]:
        problems.append(f"{entry['path']}: sha256 {digest.hexdigest()} does not match the manifest")
    if not problems and largest >= vocab_size:
        problems.append(f"{entry['path']}: token id {largest} outside the vocabulary "
                        f"[0, {vocab_size})")
    return problems


def pair_problems(dataset: manifest_lib.Dataset) -> list[str]:
    """Every problem of the manifest's Megatron pairs (none listed: none)."""
    section = dataset.doc.get("megatron")
    if not section:
        return []
    dtype, vocab = section["dtype"], dataset.tokenizer["vocab_size"]
    problems = []
    for pair in section["files"]:
        idx, name = pair["idx"], pair["idx"]["path"]
        try:
            problems += _bin_problems(storage.join(dataset.directory, pair["bin"]["path"]),
                                      pair["bin"], dtype=dtype, vocab_size=vocab)
            fs, stripped = storage.filesystem(storage.join(dataset.directory, name))
            if not fs.exists(stripped):
                problems.append(f"{name}: missing")
                continue
            data = _read_all(storage.join(dataset.directory, name))
        except OSError as err:
            problems.append(f"{pair['prefix']}: cannot be read: {type(err).__name__}: {err}")
            continue
        if len(data) != idx["bytes"] or hashlib.sha256(data).hexdigest() != idx["sha256"]:
            problems.append(f"{name}: size or sha256 does not match the manifest")
            continue
        try:
            index = parse_index(data)
        except ValueError as err:
            problems.append(f"{name}: {err}")
            continue
        problem = index_problem(index, dtype=dtype, bin_bytes=pair["bin"]["bytes"])
        if problem:
            problems.append(f"{name}: {problem}")
        elif (len(index.lengths), index.tokens) != (pair["documents"], pair["tokens"]):
            problems.append(f"{name}: {len(index.lengths)} documents / {index.tokens} tokens, "
                            f"manifest says {pair['documents']} / {pair['tokens']}")
    for key in ("documents", "tokens"):
        if sum(pair[key] for pair in section["files"]) != section[key]:
            problems.append(f"manifest: megatron.{key} is {section[key]}, its files add up to "
                            f"{sum(pair[key] for pair in section['files'])}")
    return problems


def iter_documents(dataset: manifest_lib.Dataset) -> Iterator[np.ndarray]:
    """Every Megatron document (its tokens and EOS), pair after pair, in the manifest's order;
    DataError naming the file when an ``.idx`` is unusable or a ``.bin`` ends too soon."""
    section = dataset.doc["megatron"]
    dtype = np.dtype(section["dtype"]).newbyteorder("<")
    for pair in section["files"]:
        name, bin_name = pair["idx"]["path"], pair["bin"]["path"]
        try:
            index = parse_index(_read_all(storage.join(dataset.directory, name)))
        except ValueError as err:
            raise DataError(f"{name}: {err}") from err
        problem = index_problem(index, dtype=section["dtype"], bin_bytes=pair["bin"]["bytes"])
        if problem:
            raise DataError(f"{name}: {problem}")
        fs, stripped = storage.filesystem(storage.join(dataset.directory, bin_name))
        with fs.open(stripped, "rb") as handle:
            for number, length in enumerate(index.lengths.tolist()):
                data = handle.read(length * dtype.itemsize)
                if len(data) != length * dtype.itemsize:
                    raise DataError(f"{bin_name}: ends inside its document {number}, which "
                                    f"{name} says is {length} tokens (a truncated copy?)")
                yield np.frombuffer(data, dtype=dtype)


def matching_records(documents: Iterator[np.ndarray], dataset: manifest_lib.Dataset, *,
                     problems: list[str], max_reports: int = 10) -> Iterator[np.ndarray]:
    """Pass ``documents`` (decoded from the shards) on, checking each against the next Megatron
    document (it plus EOS); what differs goes to ``problems``."""
    eos = dataset.tokenizer["special_ids"]["eos"]
    megatron, short = iter_documents(dataset), False
    for number, ids in enumerate(documents):
        try:
            doc = None if short else next(megatron, None)
        except DataError as err:  # an unreadable pair: one line, the rest not compared
            problems.append(f"megatron: {err}; documents from {number} on not compared")
            doc, short = None, True
        if doc is None and not short:
            problems.append(f"megatron: {number} documents, the shards hold more")
            short = True
        elif doc is not None and (doc[-1] != eos or not np.array_equal(doc[:-1], ids)) \
                and len(problems) < max_reports:
            problems.append(f"megatron: document {number} differs from the shards' (tokens, EOS)")
        yield ids
    try:
        more = not short and next(megatron, None) is not None
    except DataError as err:
        problems.append(f"megatron: {err}")
    else:
        if more:
            problems.append("megatron: more documents than the shards hold")
