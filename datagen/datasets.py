"""Small synthetic pilepack datasets (manifest + TFRecord shards) for tests and benchmarks.

Written with the schema's own writers (``schemas.dataset_spec``, ``schemas.records``,
``schemas.manifest``), so a dataset here is what the pipeline would have written for the same
records: ``write_dataset`` takes any records, ``learnable_dataset`` makes counting sequences a
tiny model learns in tens of steps, ``shard_tagged_dataset`` makes every token name its shard.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

import numpy as np

from schemas import manifest
from schemas.dataset_spec import DatasetSpec
from schemas.records import (
    POSITIONS,
    SEGMENT_IDS,
    TOKENS,
    RecordSpec,
    frame_tfrecord,
    serialize_example,
)

PAD, EOS = 0, 1
TOKENIZER_BYTES = b"not a real sentencepiece model, only its bytes are hashed"


def segments_of(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segment ids (1, 2, ... a new one after each EOS; 0 on padding) and positions in segment."""
    segment_ids = np.zeros_like(tokens)
    positions = np.zeros_like(tokens)
    segment, position = 1, 0
    for i, token in enumerate(tokens):
        if token == PAD:
            continue
        segment_ids[i], positions[i] = segment, position
        position += 1
        if token == EOS:
            segment, position = segment + 1, 0
    return segment_ids, positions


def random_records(
    rng: np.random.Generator, count: int, *, seq_len: int, low: int, high: int
) -> list[np.ndarray]:
    """``count`` records of seq_len + 1 tokens drawn from [low, high)."""
    return [rng.integers(low, high, size=seq_len + 1) for _ in range(count)]


def _write_shard(
    directory: str,
    *,
    name: str,
    records: Iterable[np.ndarray],
    spec: RecordSpec,
    seq_len: int,
    with_segments: bool,
) -> dict:
    """Stream ``records`` to the TFRecord file ``name`` in ``directory``; its manifest entry."""
    digest, size, count, padding = hashlib.sha256(), 0, 0, 0
    with open(os.path.join(directory, name), "wb") as handle:
        for tokens in records:
            arrays = {TOKENS: tokens}
            if with_segments:
                arrays[SEGMENT_IDS], arrays[POSITIONS] = segments_of(tokens)
            frame = frame_tfrecord(serialize_example(arrays, spec))
            handle.write(frame)
            digest.update(frame)
            size, count, padding = (
                size + len(frame),
                count + 1,
                padding + int((tokens == PAD).sum()),
            )
    return {
        "path": name,
        "bytes": size,
        "sha256": digest.hexdigest(),
        "records": count,
        "tokens": count * seq_len - padding,
        "padding_tokens": padding,
    }


def _manifest_doc(
    *,
    dataset_spec: DatasetSpec,
    entries: list[dict],
    tokenizer_bytes: bytes,
    split: str,
) -> dict:
    """The manifest of ``entries`` (one per shard), as the pipeline writes it; the fields a
    pipeline run fills from its input (accounting, subsets, config) are empty."""
    layout = dataset_spec.manifest_fields(chunk_bytes=1 << 20)
    layout["packing"]["leading_eos"] = False  # random records, not packed documents
    return {
        "format": manifest.FORMAT,
        "version": manifest.VERSION,
        "formats": ["tfrecord"],
        "split": split,
        "created": "2024-01-01T00:00:00Z",
        **layout,
        "tokenizer": {
            "file": "tokenizer.model",
            "sha256": hashlib.sha256(tokenizer_bytes).hexdigest(),
            "vocab_size": dataset_spec.vocab_size,
            "special_ids": {"pad": PAD, "eos": EOS, "unk": 2, "bos": 3},
            "lossless": True,
        },
        "shards": entries,
        "totals": {
            "shards": len(entries),
            "bytes": sum(e["bytes"] for e in entries),
            "records": sum(e["records"] for e in entries),
            "tokens": sum(e["tokens"] for e in entries),
            "padding_tokens": sum(e["padding_tokens"] for e in entries),
            "partial_records": 0,
            "dropped_records": 0,
            "dropped_tokens": 0,
            "documents": 0,
            "text_bytes": 0,
        },
        "subsets": {},
        "inputs": [],
        "accounting": {"read": 0, "written": 0, "filtered": {}, "rejected": {}},
        "dead_letters": [],
        "config": {},
        "software": {},
    }


def write_dataset(
    directory: str,
    *,
    shards: list[Iterable[np.ndarray]],
    seq_len: int,
    vocab_size: int,
    with_segments: bool = False,
    tokenizer_bytes: bytes = TOKENIZER_BYTES,
    split: str = "train",
) -> str:
    """Write ``shards`` (iterables of records) as TFRecord shards + tokenizer + manifest.

    Records are streamed to disk, so a benchmark can write large shards. Returns the manifest.
    """
    os.makedirs(directory, exist_ok=True)
    dataset_spec = DatasetSpec(seq_len=seq_len, vocab_size=vocab_size, with_segments=with_segments)
    entries = [
        _write_shard(
            directory,
            name=f"{split}-{index:05d}-of-{len(shards):05d}.tfrecord",
            records=records,
            spec=dataset_spec.record,
            seq_len=seq_len,
            with_segments=with_segments,
        )
        for index, records in enumerate(shards)
    ]
    with open(os.path.join(directory, "tokenizer.model"), "wb") as handle:
        handle.write(tokenizer_bytes)
    doc = _manifest_doc(
        dataset_spec=dataset_spec, entries=entries, tokenizer_bytes=tokenizer_bytes, split=split
    )
    return manifest.write(doc, directory=directory)


def shard_tagged_dataset(
    directory: str,
    *,
    records_per_shard: list[int],
    seq_len: int = 8,
    vocab_size: int = 64,
    seed: int = 0,
    pad_odd_shards: int = 0,
    **kwargs,
) -> str:
    """Shard k holds only token ids in [4 + 10k, 14 + 10k), so a token names its shard; records
    of odd shards end in ``pad_odd_shards`` PAD tokens."""
    rng = np.random.default_rng(seed)
    shards = [
        random_records(rng, n, seq_len=seq_len, low=4 + 10 * k, high=14 + 10 * k)
        for k, n in enumerate(records_per_shard)
    ]
    for records in shards[1::2]:
        for record in records:
            record[len(record) - pad_odd_shards :] = PAD
    return write_dataset(directory, shards=shards, seq_len=seq_len, vocab_size=vocab_size, **kwargs)


def learnable_dataset(
    directory: str,
    *,
    shards: int = 2,
    records_per_shard: int = 64,
    seq_len: int = 16,
    vocab_size: int = 32,
    seed: int = 0,
    **kwargs,
) -> str:
    """Counting sequences (t, t+1, t+2, ... mod the vocabulary), learnt in tens of steps."""
    rng = np.random.default_rng(seed)
    span = vocab_size - 4
    records = [
        [4 + (rng.integers(span) + np.arange(seq_len + 1)) % span for _ in range(records_per_shard)]
        for _ in range(shards)
    ]
    return write_dataset(
        directory, shards=records, seq_len=seq_len, vocab_size=vocab_size, **kwargs
    )
