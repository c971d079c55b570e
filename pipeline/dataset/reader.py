"""Read a written split back: parsed record batches, and every document's token ids.

The reader side of ``pipeline/write/pack.py`` for tools (``pipeline.roundtrip``,
``pipeline.verify --deep``, benchmarks); the trainer has its own ``tf.data`` reader
(``trainer/input/files.py``).
Records are parsed by TensorFlow from the manifest's record spec (imported lazily).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from common import storage
from common.errors import DataError
from schemas import manifest as manifest_lib
from schemas.records import iter_tfrecord_frames


def parse_payloads(payloads: list[bytes], spec) -> dict[str, np.ndarray]:
    """Serialized records -> numpy arrays [N, seq_len + 1], with TensorFlow and the spec."""
    from common.cli import import_tensorflow

    tf = import_tensorflow()

    from schemas.records_tf import parse_records

    parsed = parse_records(tf.constant(payloads, dtype=tf.string), spec)
    return {name: value.numpy() for name, value in parsed.items()}


def iter_record_batches(dataset: manifest_lib.Dataset, path: str, *, batch: int = 512):
    """Parsed records of one shard as numpy arrays (read through fsspec, parsed by TF)."""
    spec = dataset.record_spec
    fs, stripped = storage.filesystem(path)
    payloads = []
    with fs.open(stripped, "rb") as handle:
        for payload in iter_tfrecord_frames(handle):
            payloads.append(payload)
            if len(payloads) == batch:
                yield parse_payloads(payloads, spec)
                payloads = []
    if payloads:
        yield parse_payloads(payloads, spec)


def iter_documents(dataset: manifest_lib.Dataset) -> Iterator[np.ndarray]:
    """Token ids of every document of a split, in order (the inverse of ``pipeline.write.pack``).

    Each record's first token repeats the previous record's last real one (or is a chunk's
    leading EOS, after a record closed by EOS), so it is dropped; padding is dropped; the rest
    is ``d1 EOS d2 EOS ...``. A split written with ``--last_record=drop`` lost each chunk's
    tail: the first record after such a cut does not continue its predecessor, and decoding
    stops there with DataError instead of joining two documents.
    """
    if (dataset.doc.get("shuffle") or {}).get("mode", "off") != "off":
        raise DataError(f"{dataset.manifest_path}: the split was written with --shuffle=global: "
                        "its records are permuted, so documents cannot be read back in order")
    pad = dataset.tokenizer["special_ids"]["pad"]
    eos = dataset.tokenizer["special_ids"]["eos"]
    carry = np.zeros(0, dtype=np.int32)  # a document continued from the previous batch
    previous_last = eos  # the token before the first record: a chunk starts after EOS
    for path in dataset.shard_paths():
        for arrays in iter_record_batches(dataset, path):
            tokens = arrays["tokens"]
            real = tokens != pad
            lasts = tokens[np.arange(len(tokens)), real.shape[1] - 1 - np.argmax(real[:, ::-1], 1)]
            expected = np.concatenate([[previous_last], lasts[:-1]])
            broken = np.flatnonzero(tokens[:, 0] != expected)
            if len(broken):
                raise DataError(
                    f"{dataset.manifest_path}: in {path}, record {int(broken[0])} of a batch does "
                    "not continue the record before it: the split was written with "
                    "--last_record=drop, whose dropped chunk tails cut documents; rebuild it "
                    "with --last_record=pad to decode it")
            previous_last = lasts[-1]
            body = tokens[:, 1:]
            stream = np.concatenate([carry, body[body != pad]])
            start = 0
            for end in np.flatnonzero(stream == eos):
                yield stream[start:end]
                start = end + 1
            carry = stream[start:]
    if len(carry):
        raise DataError(f"{dataset.manifest_path}: the split ends inside a document "
                         "(written with --last_record=drop?)")
