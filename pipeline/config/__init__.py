"""The pipeline's options: frozen, validated dataclasses whose fields are also the flags.

Each field is declared once with ``common.flags.flag`` (default, help, choices; a dataclass
with choices calls ``check_choices`` to refuse others); ``add_flags`` makes the argparse flags
from them, so ``python -m pipeline.run --help`` is the reference. Beam's own flags
(``--runner``, ...) are parsed by Beam (``pipeline.launch.beam_options``).
"""

from __future__ import annotations

import dataclasses
import json
import os

from common.flags import check_choices, flag, require
from pipeline.config.mixture_weights import parse_budgets, parse_weights
from pipeline.filters import rules as filter_rules
from schemas.block_shuffle import DEFAULT_SPEC
from schemas.formats import DEFAULT_FORMATS, FORMATS, formats_problem
from tokenizer.spec import DEFAULT_VOCAB_SIZE, MIN_VOCAB_SIZE

GIB = 1 << 30
MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class ReadConfig:
    """What to read and how defensively."""

    include_subsets: tuple[str, ...] = flag((), help="comma list of pile_set_name to keep")
    exclude_subsets: tuple[str, ...] = flag(
        (), help="comma list of pile_set_name to drop, e.g. Books3")
    on_bad_record: str = flag(
        "skip", choices=("skip", "fail"),
        help="skip: write bad records to dead letters and go on; fail: stop at the first one")
    max_bad_fraction: float = flag(
        0.01, help="fail the run (no manifest) when rejected/read documents exceeds this")
    max_line_bytes: int = flag(
        64 * MIB, help="longest accepted JSON line; longer lines are rejected as line_too_long "
                       "(tokenizing a document takes ~25x its size in memory)")
    max_window_bytes: int = flag(
        128 * MIB, help="largest zstd window accepted (zstd's own default limit; the Pile needs "
                        "8 MiB; files made with zstd --long=31 need 2147483648)")
    chunk_bytes: int = flag(
        4 * MIB, help="bytes of input lines per work item (parsed, encoded in one batched call "
                      "and packed together)")
    # Quality filters (docs/filters.md), applied as documents are parsed.
    filters: tuple[str, ...] = flag(
        (), help="comma list of quality filters: gopher (Gopher's quality and repetition "
                 "rules), c4, fineweb; a document failing a rule is filtered, counted under "
                 "the rule's name and written to the dead letters' filtered records")
    filter_profile: str = flag(
        "pile", choices=filter_rules.PROFILES,
        help="pile: each rule only on the Pile subsets it suits (web text gets every rule; "
             "docs/filters.md's table); all: every rule on every subset")
    filter_thresholds: str = flag(
        "", help='JSON object of rule -> threshold replacing the reference\'s default, e.g. '
                 '\'{"gopher_min_words": 100}\'')
    filter_subsets: str = flag(
        "", help="JSON object of pile_set_name -> {rule: false (off), true (on) or a "
                 "threshold}, over --filter_profile, e.g. '{\"Github\": {\"gopher_min_words\": "
                 "10}}'")

    def __post_init__(self):
        check_choices(self)
        object.__setattr__(self, "filters", tuple(self.filters))  # a manifest's JSON list too
        filter_rules.check_options(filters=self.filters, thresholds=self.filter_thresholds,
                                   subsets=self.filter_subsets)
        require(0.0 <= self.max_bad_fraction <= 1.0,
                f"--max_bad_fraction must be in [0, 1], got {self.max_bad_fraction}")
        require(not (self.include_subsets and self.exclude_subsets),
                "give --include_subsets or --exclude_subsets, not both")
        for name in ("max_line_bytes", "max_window_bytes", "chunk_bytes"):
            require(getattr(self, name) >= 1024,
                    f"--{name} must be at least 1024, got {getattr(self, name)}")
        require(self.max_window_bytes <= 2 * GIB,
                f"--max_window_bytes is at most 2147483648 (zstd's limit), "
                f"got {self.max_window_bytes}")

    def filter_rules(self, subset: str) -> dict[str, float | None]:
        """Rule -> threshold of the quality filters that apply to ``subset`` ({}: none)."""
        if not self.filters:
            return {}
        return dict(filter_rules.active_rules(
            filters=self.filters, profile_name=self.filter_profile,
            thresholds=self.filter_thresholds, subsets=self.filter_subsets, subset=subset))

    def selects(self, subset: str) -> bool:
        if self.include_subsets:
            return subset in self.include_subsets
        return subset not in self.exclude_subsets

    @classmethod
    def from_json(cls, doc: dict) -> "ReadConfig":
        """Inverse of the manifest's ``config.read`` (JSON lists back to tuples)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})


@dataclasses.dataclass(frozen=True)
class TokenizerTrainingConfig:
    """How a tokenizer is trained on a sample of the input (shared by the pipeline and
    ``python -m pipeline.train_tokenizer``)."""

    vocab_size: int = flag(
        DEFAULT_VOCAB_SIZE, help="vocabulary size when training (a soft limit: a small corpus "
                                 "yields fewer pieces; the manifest records the real size)")
    tokenizer_sample_bytes: int = flag(
        100 * MIB, help="text bytes drawn from the input (stratified by pile_set_name) to train "
                        "the tokenizer")
    seed: int = flag(0, help="seed of the tokenizer sample and of SentencePiece training "
                             "(pipeline.run: also of --subset_weights/--subset_tokens resampling "
                             "and of --shuffle=global)")
    num_threads: int = flag(0, help="SentencePiece trainer threads; 0 = all cores")

    def __post_init__(self):
        require(self.vocab_size >= MIN_VOCAB_SIZE,
                f"--vocab_size must be >= {MIN_VOCAB_SIZE} (4 reserved ids, 256 byte pieces and "
                f"at least one learned piece), got {self.vocab_size}")
        require(self.tokenizer_sample_bytes >= 1,
                f"--tokenizer_sample_bytes must be positive, got {self.tokenizer_sample_bytes}")
        require(self.num_threads >= 0, f"--num_threads must be >= 0, got {self.num_threads}")

    @property
    def threads(self) -> int:
        return self.num_threads or os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class QualityConfig:
    """Data quality: exact dedup, contamination removal, the mixture, the global shuffle
    (docs/data-quality.md). What they ask the run to do is decided once, from these flags, by
    ``pipeline.quality.plan.plan_quality``."""

    dedup: str = flag(
        "off", choices=("off", "exact", "near"),
        help="exact: keep only the first (lowest input file, line) of documents whose "
             "normalized text hashes alike; the others are filtered as duplicate; near: also "
             "cluster the rest by MinHash-LSH and keep the first of each cluster, the others "
             "filtered as near_duplicate")
    near_dup_threshold: float = flag(
        0.8, help="--dedup=near: least estimated Jaccard similarity of word shingles for two "
                  "documents to be near-duplicates")
    minhash_perm: int = flag(
        128, help="--dedup=near: MinHash values per signature (a power of two)")
    minhash_bands: int = flag(
        16, help="--dedup=near: LSH bands (must divide --minhash_perm); more bands find more "
                 "candidates below --near_dup_threshold, at more shuffle")
    shingle_words: int = flag(5, help="--dedup=near: words per shingle")
    exclude_docs_from: tuple[str, ...] = flag(
        (), help="comma list of manifests of other splits (or their directories) and/or raw "
                 "Pile files/globs: every document whose hash appears there is filtered as "
                 "contaminated")
    decontaminate: tuple[str, ...] = flag(
        (), help="comma list of evaluation sets: .jsonl[.zst|.gz] files/globs/directories "
                 "(one passage per line, see --decontaminate_field) or other splits' manifests "
                 "(their recorded input files); a document sharing a word n-gram with any "
                 "passage is dropped or redacted (--decontaminate_mode)")
    decontaminate_mode: str = flag(
        "drop", choices=("drop", "redact"),
        help="drop: filter the document as decontaminated; redact: cut the overlapping words "
             "out of its text (a document left blank drops)")
    decontaminate_ngram: int = flag(
        13, help="words per n-gram for --decontaminate (13: GPT-3's, Brown et al. 2020, "
                 "Appendix C); shorter passages are skipped (counted in the manifest)")
    decontaminate_field: str = flag(
        "text", help="--decontaminate: the JSON field holding an evaluation passage")
    subset_weights: str = flag(
        "", help="epochs per pile_set_name: a JSON object (e.g. '{\"Wikipedia (en)\": 3}'; "
                 "subsets not named keep 1) or pile-v1 (the Pile paper's Table 1)")
    subset_tokens: str = flag(
        "", help="token budget per pile_set_name instead of epochs: a JSON object (e.g. "
                 "'{\"Github\": 2e9}'; subsets not named keep all their tokens)")
    shuffle: str = flag(
        "off", choices=("off", "global"),
        help="global: shards hold a seeded shuffle of the split's records (--seed), in blocks "
             "and windows (--shuffle_block_records, --shuffle_window_blocks)")
    shuffle_block_records: int = flag(
        DEFAULT_SPEC.block_records,
        help="--shuffle=global: neighbouring records of one part kept together as a block, "
             "read with one ranged request (object stores: one GET per this many records)")
    shuffle_window_blocks: int = flag(
        DEFAULT_SPEC.window_blocks,
        help="--shuffle=global: blocks whose records are mixed together; a shard writer holds "
             "this many blocks of records")

    def __post_init__(self):
        check_choices(self)
        require(0.0 < self.near_dup_threshold <= 1.0,
                f"--near_dup_threshold must be in (0, 1], got {self.near_dup_threshold}")
        perm = self.minhash_perm
        require(2 <= perm <= 4096 and not perm & (perm - 1),
                "--minhash_perm must be a power of two in [2, 4096] (one-permutation hashing "
                f"splits each hash into that many bins), got {self.minhash_perm}")
        require(1 <= self.minhash_bands <= self.minhash_perm
                and self.minhash_perm % self.minhash_bands == 0,
                f"--minhash_bands must divide --minhash_perm ({self.minhash_perm}), "
                f"got {self.minhash_bands}")
        require(self.shuffle_block_records >= 1 and self.shuffle_window_blocks >= 1,
                "--shuffle_block_records and --shuffle_window_blocks must be >= 1, got "
                f"{self.shuffle_block_records} and {self.shuffle_window_blocks}")
        require(1 <= self.shingle_words <= 64,
                f"--shingle_words must be in [1, 64], got {self.shingle_words}")
        require(1 <= self.decontaminate_ngram <= 64,
                f"--decontaminate_ngram must be in [1, 64], got {self.decontaminate_ngram}")
        require(bool(self.decontaminate_field),
                "--decontaminate_field must name a JSON field, got ''")
        require(not (self.subset_weights and self.subset_tokens),
                "give --subset_weights or --subset_tokens, not both")
        parse_weights(self.subset_weights)  # ConfigError naming the flag
        parse_budgets(self.subset_tokens)

    @classmethod
    def from_json(cls, doc: dict) -> "QualityConfig":
        """Inverse of the manifest's ``config.quality`` (JSON lists back to tuples)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """Everything one run needs; recorded in the manifest's ``config``."""

    input: str = flag("", help="glob, directory or comma-separated list of them (local, EFS or "
                               "s3://) of .jsonl.zst/.jsonl/.jsonl.gz files; default: the "
                               "built-in sample")
    output: str = flag("", help="dataset directory (local, EFS or s3://); required with --input; "
                                "default with the built-in sample: output/sample")
    split: str = flag("", help="split name recorded in the manifest and shard names; default: "
                               "the output directory's name")
    seq_len: int = flag(2048, help="tokens per training sequence; records hold seq_len + 1")
    segment_ids: bool = flag(
        False, help="also store per-token segment ids and positions (document-boundary masking)")
    last_record: str = flag(
        "pad", choices=("pad", "drop"),
        help="a chunk's final partial record: pad it with the pad id, or drop it (counted)")
    shard_bytes: int = flag(GIB, help="target TFRecord shard size in bytes (and Megatron pair's "
                                      ".bin size with --formats=...,megatron)")
    formats: tuple[str, ...] = flag(
        DEFAULT_FORMATS, help=f"output formats, comma list of {', '.join(FORMATS)}; tfrecord is "
                              "always written (the manifest, verify and the trainer read it); "
                              "megatron adds Megatron-Core indexed datasets, arrayrecord one "
                              "ArrayRecord file per shard for Grain (docs/formats.md)")
    tokenizer_model: str | None = flag(
        None, help="existing SentencePiece model to apply (copied next to the shards); "
                   "default: train one on a sample of --input")
    encode_processes: int = flag(
        0, help="encoder processes per Beam worker; 0 = one per core with the DirectRunner, "
                "1 (in-process) with other runners, which already run a worker per core")
    encoder: str = flag(
        "auto", choices=("auto", "sentencepiece", "gigatoken"),
        help="encoder backend: auto = the fastest that encodes the model exactly (gigatoken), "
             "else sentencepiece with its word cache, saying why; ids are the same either way")
    encoder_threads: int = flag(
        0, help="encoder threads per Beam worker: threads encoding chunks with a backend that "
                "releases the GIL, or the in-process encoder's own (--encode_processes=1), also "
                "the --subset_tokens pre-pass's; 0 = auto: one per core with the in-process "
                "DirectRunner, else 1 (the pre-pass: every core)")
    on_encoder_mismatch: str = flag(
        "fail", choices=("fail", "fallback"),
        help="when the exactness guard finds a fast backend's ids differ from SentencePiece's: "
             "fail naming the document, or re-encode its chunk with sentencepiece (counted)")
    encoder_check_every: int = flag(
        64, help="the guard also encodes 1 in this many documents (by a hash of file and line) "
                 "with SentencePiece and compares; 0 = only documents holding U+2581 or a "
                 "control piece's text")
    fanout: str = flag(
        "auto", choices=("auto", "on", "off"),
        help="spread chunks over all workers after reading (a shuffle), so one input file uses "
             "every core of a cluster; auto: on for distributed runners and the "
             "multi_processing DirectRunner, off for the in-memory DirectRunner, which would "
             "hold the whole input at the shuffle (it uses its encoder processes instead)")
    overwrite: bool = flag(
        False, help="replace a complete dataset already at --output (its manifest is removed "
                    "first)")
    resume: bool = flag(
        True, help="reuse what a killed or failed run at --output committed for the same "
                   "inputs and options: its trained tokenizer, quality pre-pass and written "
                   "chunks (docs/distributed.md); --no-resume (or --overwrite) starts clean")
    cancel_on_interrupt: bool = flag(
        True, help="when the launcher is interrupted (Ctrl-C, SIGTERM), cancel the job it "
                   "submitted (Dataflow, Flink, Spark, a job service) before exiting; "
                   "--no-cancel_on_interrupt leaves the job running, and --output claimed by it "
                   "until it ends")
    take_over_claim: str = flag(
        "", metavar="RUN_ID",
        help="take over --output's claim of this run although its job's state cannot be "
             "checked (a job service that does not answer, Dataflow without apache-beam[gcp] "
             "or credentials, a launcher on another machine): pass it only once that job has "
             "ended or you have cancelled it; a job seen running is never taken over")
    dry_run: bool = flag(
        False, help="write nothing: sample the input and print the run's text, tokens, records, "
                    "shards, output size, core-hours and wall time (pipeline.launch.dry_run)")
    dry_run_cores_per_worker: int = flag(
        0, help="with --dry_run: cores of each Beam worker; 0 = from --machine_type "
                "(n2-standard-8 -> 8), else 1 (this machine's with the in-memory DirectRunner)")
    training: TokenizerTrainingConfig = dataclasses.field(default_factory=TokenizerTrainingConfig)
    read: ReadConfig = dataclasses.field(default_factory=ReadConfig)
    quality: QualityConfig = dataclasses.field(default_factory=QualityConfig)

    def __post_init__(self):
        check_choices(self)
        derived = ""
        if not self.split and self.output:
            # Frozen: the derived default is set once, here, so every reader sees the same name.
            name = os.path.basename(self.output.rstrip("/")) or "train"
            object.__setattr__(self, "split", name)
            derived = " (taken from --output's name; pass --split=NAME)"
        require(self.seq_len >= 1, f"--seq_len must be >= 1, got {self.seq_len}")
        object.__setattr__(self, "formats", tuple(self.formats))  # a manifest's JSON list too
        problem = formats_problem(self.formats)
        require(problem is None, problem or "")
        require(self.shard_bytes >= 64 * 1024,
                f"--shard_bytes must be at least 65536, got {self.shard_bytes}")
        require(self.dry_run_cores_per_worker >= 0,
                f"--dry_run_cores_per_worker must be >= 0, got {self.dry_run_cores_per_worker}")
        require(self.encode_processes >= 0,
                f"--encode_processes must be >= 0 (0 = auto), got {self.encode_processes}")
        require(self.encoder_threads >= 0,
                f"--encoder_threads must be >= 0 (0 = auto), got {self.encoder_threads}")
        require(self.encoder_check_every >= 0,
                f"--encoder_check_every must be >= 0, got {self.encoder_check_every}")
        require(not self.split
                or self.split.replace("_", "").replace("-", "").replace(".", "").isalnum(),
                f"--split must be letters, digits, '_', '-', '.', got {self.split!r}{derived}")

    def to_json(self) -> dict:
        # Through JSON so tuples become lists: the manifest reads back equal to what was built.
        return json.loads(json.dumps(dataclasses.asdict(self)))
