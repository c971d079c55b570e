"""The pipeline's own flags -> a frozen, validated PipelineConfig (Beam's flags pass through)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

GIB = 1 << 30
MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class ReadConfig:
    """What to read and how defensively."""

    include_subsets: tuple[str, ...] = ()
    exclude_subsets: tuple[str, ...] = ()
    on_bad_record: str = "skip"
    max_bad_fraction: float = 0.01
    max_line_bytes: int = 64 * MIB
    max_window_bytes: int = 128 * MIB
    chunk_bytes: int = 4 * MIB

    def __post_init__(self):
        if self.on_bad_record not in ("skip", "fail"):
            raise ValueError(f"--on_bad_record must be skip or fail, got {self.on_bad_record!r}")
        if not 0.0 <= self.max_bad_fraction <= 1.0:
            raise ValueError(f"--max_bad_fraction must be in [0, 1], got {self.max_bad_fraction}")
        if self.include_subsets and self.exclude_subsets:
            raise ValueError("give --include_subsets or --exclude_subsets, not both")
        for name in ("max_line_bytes", "max_window_bytes", "chunk_bytes"):
            if getattr(self, name) < 1024:
                raise ValueError(f"--{name} must be at least 1024, got {getattr(self, name)}")
        if self.max_window_bytes > 2 * GIB:
            raise ValueError(f"--max_window_bytes is at most 2147483648 (zstd's limit), "
                             f"got {self.max_window_bytes}")

    def selects(self, subset: str) -> bool:
        if self.include_subsets:
            return subset in self.include_subsets
        return subset not in self.exclude_subsets


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """Everything one run needs; recorded in the manifest's ``config``."""

    input: str
    output: str
    split: str
    seq_len: int = 2048
    segment_ids: bool = False
    last_record: str = "pad"
    shard_bytes: int = GIB
    tokenizer_model: str | None = None
    vocab_size: int = 32000
    tokenizer_sample_bytes: int = 100 * MIB
    seed: int = 0
    num_threads: int = 0
    encode_processes: int = 1
    overwrite: bool = False
    read: ReadConfig = dataclasses.field(default_factory=ReadConfig)

    def __post_init__(self):
        if self.seq_len < 1:
            raise ValueError(f"--seq_len must be >= 1, got {self.seq_len}")
        if self.last_record not in ("pad", "drop"):
            raise ValueError(f"--last_record must be pad or drop, got {self.last_record!r}")
        if self.shard_bytes < 64 * 1024:
            raise ValueError(f"--shard_bytes must be at least 65536, got {self.shard_bytes}")
        if self.encode_processes < 1:
            raise ValueError(f"--encode_processes must be >= 1, got {self.encode_processes}")
        if self.vocab_size < 260:
            raise ValueError(f"--vocab_size must be >= 260 (256 byte pieces + 4 reserved ids), "
                             f"got {self.vocab_size}")
        if not self.split.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise ValueError(f"--split must be letters, digits, '_', '-', '.', got {self.split!r}")

    @property
    def encoder_threads(self) -> int:
        return self.num_threads or os.cpu_count() or 1

    def to_json(self) -> dict:
        # Through JSON so tuples become lists: the manifest reads back equal to what was built.
        return json.loads(json.dumps(dataclasses.asdict(self)))


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The pipeline's flags; README.md documents each."""
    add = parser.add_argument
    add("--input", default=None,
        help="glob, directory or comma-separated list of them (local, EFS or s3://) of "
             ".jsonl.zst/.jsonl/.jsonl.gz files; default: the built-in sample")
    add("--output", default=None,
        help="dataset directory (local, EFS or s3://); default: output/sample")
    add("--split", default=None, help="split name recorded in the manifest and shard names; "
                                      "default: the output directory's name")
    add("--seq_len", type=int, default=2048, help="tokens per training sequence")
    add("--segment_ids", action="store_true",
        help="also store per-token segment ids and positions (document-boundary masking)")
    add("--last_record", choices=("pad", "drop"), default="pad",
        help="a chunk's final partial record: pad it (mask = tokens != pad id) or drop it")
    add("--shard_bytes", type=int, default=GIB, help="target TFRecord shard size in bytes")
    add("--tokenizer_model", default=None,
        help="existing SentencePiece model to apply; default: train one on a sample of --input")
    add("--vocab_size", type=int, default=32000, help="vocabulary size when training")
    add("--tokenizer_sample_bytes", type=int, default=100 * MIB,
        help="text bytes drawn (stratified by pile_set_name) to train the tokenizer")
    add("--seed", type=int, default=0, help="seed of the tokenizer sample and training")
    add("--num_threads", type=int, default=0,
        help="SentencePiece threads of an in-process encoder; 0 = all cores")
    add("--encode_processes", type=int, default=0,
        help="encoder processes per Beam worker; 0 = one per core with the DirectRunner, "
             "1 (in-process) with other runners, which already run a worker per core")
    add("--include_subsets", type=_csv, default=(), help="comma list of pile_set_name to keep")
    add("--exclude_subsets", type=_csv, default=(),
        help="comma list of pile_set_name to drop, e.g. Books3")
    add("--on_bad_record", choices=("skip", "fail"), default="skip",
        help="skip: write bad records to dead letters and go on; fail: stop at the first one")
    add("--max_bad_fraction", type=float, default=0.01,
        help="fail the run when rejected/read documents exceeds this fraction")
    add("--max_line_bytes", type=int, default=64 * MIB,
        help="longest accepted JSON line; longer lines are rejected as line_too_long "
             "(tokenizing a document takes ~25x its size in memory)")
    add("--max_window_bytes", type=int, default=128 * MIB,
        help="largest zstd window accepted (zstd's own default limit; the Pile needs 8 MiB; "
             "files made with zstd --long=31 need 2147483648)")
    add("--chunk_bytes", type=int, default=4 * MIB,
        help="text bytes per work item (tokenized and packed together)")
    add("--overwrite", action="store_true",
        help="replace a complete dataset already at --output")


def config_from_args(args: argparse.Namespace, *, input: str, output: str) -> PipelineConfig:
    split = args.split or os.path.basename(output.rstrip("/")) or "train"
    return PipelineConfig(
        input=input,
        output=output,
        split=split,
        seq_len=args.seq_len,
        segment_ids=args.segment_ids,
        last_record=args.last_record,
        shard_bytes=args.shard_bytes,
        tokenizer_model=args.tokenizer_model,
        vocab_size=args.vocab_size,
        tokenizer_sample_bytes=args.tokenizer_sample_bytes,
        seed=args.seed,
        num_threads=args.num_threads,
        encode_processes=args.encode_processes or 1,
        overwrite=args.overwrite,
        read=ReadConfig(
            include_subsets=tuple(args.include_subsets),
            exclude_subsets=tuple(args.exclude_subsets),
            on_bad_record=args.on_bad_record,
            max_bad_fraction=args.max_bad_fraction,
            max_line_bytes=args.max_line_bytes,
            max_window_bytes=args.max_window_bytes,
            chunk_bytes=args.chunk_bytes,
        ),
    )
