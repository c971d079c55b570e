"""Record encodings side by side: raw uint16 bytes (ours) vs int64_list, size and read speed.

    python -m bench.record_format_bench [--records=4000] [--seq_len=2048] [--vocab=32000]

Writes the same random-but-Zipfian token records both ways, then reads each file back through
tf.data (TFRecordDataset -> batch 64 -> parse -> decode) on one thread, interleaving the two
readers A, B, A, B, ... and reporting bytes per token and tokens/s (median of the reps).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow's first import

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from common.flags import ArgumentParser, add_flags, flag, from_args  # noqa: E402
from schemas.records import RecordSpec, frame_tfrecord, serialize_example  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Options:
    records: int = flag(4000, help="records written and read back")
    seq_len: int = flag(2048, help="tokens per sequence (records hold seq_len + 1)")
    vocab: int = flag(32000, help="vocabulary of the Zipfian ids")
    reps: int = flag(5, help="interleaved repetitions of each reader")
    manifest: str = flag(
        "", help="take real records from this dataset instead of Zipfian ids (its seq_len and "
        "vocabulary replace --seq_len and --vocab)"
    )


def _tokens(records: int, width: int, vocab: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    ids = rng.zipf(1.2, size=(records, width)) % vocab  # natural text is Zipfian
    return ids.astype(np.uint16 if vocab <= 65536 else np.int32)


def _real_tokens(manifest_path: str, records: int) -> np.ndarray:
    from pipeline.dataset.reader import iter_record_batches
    from schemas import manifest

    dataset = manifest.load(manifest_path)
    rows = []
    for path in dataset.shard_paths():
        for batch in iter_record_batches(dataset, path):
            rows.append(batch["tokens"].astype(np.uint16))
            if sum(map(len, rows)) >= records:
                return np.concatenate(rows)[:records]
    return np.concatenate(rows)


def write_raw(path, tokens, spec):
    with open(path, "wb") as f:
        for row in tokens:
            f.write(frame_tfrecord(serialize_example({"tokens": row}, spec)))


def write_int64(path, tokens):
    with tf.io.TFRecordWriter(path) as writer:
        for row in tokens:
            feature = tf.train.Feature(int64_list=tf.train.Int64List(value=row.tolist()))
            example = tf.train.Example(features=tf.train.Features(feature={"tokens": feature}))
            writer.write(example.SerializeToString())


def read_raw(path, spec):
    desc = {"tokens": tf.io.FixedLenFeature([], tf.string)}
    ds = tf.data.TFRecordDataset(path).batch(64).map(
        lambda s: tf.io.decode_raw(tf.io.parse_example(s, desc)["tokens"], tf.uint16))
    return ds


def read_int64(path, spec):
    desc = {"tokens": tf.io.FixedLenFeature([spec.record_len], tf.int64)}
    return tf.data.TFRecordDataset(path).batch(64).map(
        lambda s: tf.io.parse_example(s, desc)["tokens"])


def _time(dataset) -> float:
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    started = time.perf_counter()
    for _ in dataset.with_options(options):
        pass
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m bench.record_format_bench", description=__doc__)
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
    seq_len, vocab = options.seq_len, options.vocab
    if options.manifest:
        tokens = _real_tokens(options.manifest, options.records)
        seq_len, vocab = tokens.shape[1] - 1, int(tokens.max()) + 1
    spec = RecordSpec(seq_len=seq_len, token_dtype="uint16")
    if not options.manifest:
        tokens = _tokens(options.records, spec.record_len, vocab)
    n_tokens = tokens.size
    with tempfile.TemporaryDirectory() as tmp:
        raw, i64 = os.path.join(tmp, "raw.tfrecord"), os.path.join(tmp, "i64.tfrecord")
        write_raw(raw, tokens, spec)
        write_int64(i64, tokens)
        times = {"raw": [], "int64": []}
        for _ in range(options.reps):
            times["raw"].append(_time(read_raw(raw, spec)))
            times["int64"].append(_time(read_int64(i64, spec)))
        print(f"{options.records} records x {spec.record_len} tokens, vocab {vocab}, "
              f"1 tf.data thread, {options.reps} interleaved reps")
        print("| encoding | bytes/token | tokens/s (1 core) |")
        print("|---|---:|---:|")
        for name, path in (("raw uint16 bytes (ours)", raw), ("int64_list", i64)):
            key = "raw" if path == raw else "int64"
            print(f"| {name} | {os.path.getsize(path) / n_tokens:.3f} | "
                  f"{n_tokens / statistics.median(times[key]):,.0f} |")
        ratio = statistics.median(i / r for r, i in zip(times["raw"], times["int64"]))
        print(f"read speed ratio raw/int64: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
