"""``python -m pipeline.run --dry_run``: what a run would cost, from a small sample; writes nothing.

It lists the inputs, reads the start of up to 16 of them (evenly spaced;
``pipeline.launch.dry_run_sample``) and extrapolates:

* text bytes per input byte, per file, and the number of documents;
* tokens: with ``--tokenizer_model`` the sample is tokenized and bytes per token measured per
  subset; without one, ``ASSUMED_BYTES_PER_TOKEN`` is assumed (and said so);
* records, shards and output bytes from the packing rules (``pipeline.write.pack``,
  ``pipeline.write.shard_plan``): exact for files read to their end, whose chunks are rebuilt;
* core-hours at ``TEXT_MB_PER_CORE_SECOND`` (per ``--encoder``), the pipeline's measured
  throughput per core (``THROUGHPUT_SOURCE``), and wall time on Beam's ``--num_workers`` workers of
  ``--dry_run_cores_per_worker`` cores (else the cores of ``--machine_type``, e.g.
  ``n2-standard-8`` -> 8), capped by the parallelism the run can use (chunks with fan-out,
  files without), plus reading the largest file, which one worker does start to end: with
  fan-out the shuffle is a barrier in batch runs, so tokenizing starts once every file is read.
"""

from __future__ import annotations

import dataclasses
import math
import re

from pipeline.config import PipelineConfig
from pipeline.launch.dry_run_sample import (
    ASSUMED_BYTES_PER_TOKEN,
    SAMPLE_TEXT_BYTES,
    FileSample,
    sample_file,
    sampled_indices,
)
from pipeline.read.inputs import InputFile

# Text MB per CPU-second of the whole pipeline with fan-out (read, shuffle, tokenize with a
# 32,000-piece BPE, pack, write parts and shards, start-up included), by --encoder: two
# multi_processing DirectRunner workers on one 94 MB-of-text file, the whole process tree's CPU
# time (so other jobs on the machine do not change it), median of interleaved reps. "auto" is
# the fast backend's figure (it falls back to sentencepiece when that cannot be exact).
TEXT_MB_PER_CORE_SECOND = {"auto": 6.50, "gigatoken": 6.50, "sentencepiece": 3.63}
THROUGHPUT_SOURCE = ("python -m bench.scaling_bench, 2 workers, 50 MB Pile-format corpus x 2, "
                     "32k BPE; BENCHMARKS.md 'Scaling out on one file'")
_MACHINE_CORES = (re.compile(r"^(?:[a-z0-9]+-)?custom-(\d+)-\d+(?:-ext)?$"),  # custom-8-32768
                  re.compile(r"^[a-z][a-z0-9]*-[a-z]+-(\d+)(?:-[a-z0-9]+)?$"))  # n2-standard-8


def per_core_rate(config: PipelineConfig) -> float:
    """Text MB per core-second for ``config``'s encoder backend."""
    return TEXT_MB_PER_CORE_SECOND.get(config.encoder, TEXT_MB_PER_CORE_SECOND["sentencepiece"])


def machine_cores(machine_type: str | None) -> int | None:
    """vCPUs of a Compute Engine machine type (``n2-standard-8`` -> 8), else None."""
    for pattern in _MACHINE_CORES:
        match = pattern.match(machine_type or "")
        if match:
            return int(match.group(1))
    return None


@dataclasses.dataclass(frozen=True)
class Cluster:
    """Where the run would go, as Beam's options say (each figure with where it came from)."""

    runner: str
    workers: int
    cores_per_worker: int
    source: str  # which flags gave workers and cores
    fanout: bool


def cluster_from_options(config: PipelineConfig, beam_args: list[str]) -> Cluster:
    """Workers from Beam's ``--num_workers`` (WorkerOptions; ``--direct_num_workers`` for the
    DirectRunner), cores from ``--dry_run_cores_per_worker`` or ``--machine_type``."""
    from apache_beam.options.pipeline_options import (
        DirectOptions,
        PipelineOptions,
        WorkerOptions,
    )

    from pipeline.launch.beam_options import (
        direct_running_mode,
        fanout_enabled,
        is_direct_runner,
        runner_name,
    )
    from tokenizer.encoder import usable_cores

    options = PipelineOptions(beam_args)
    worker = options.view_as(WorkerOptions)
    local = usable_cores()
    notes = []
    if is_direct_runner(beam_args):
        if direct_running_mode(beam_args) == "in_memory":
            workers, cores = 1, local
            notes.append(f"in-memory DirectRunner: 1 worker, this machine's {local} cores")
        else:
            workers = options.view_as(DirectOptions).direct_num_workers or local
            cores = 1
            notes.append(f"--direct_num_workers: {workers} worker processes of 1 core")
    else:
        workers = worker.num_workers or worker.max_num_workers or 1
        notes.append(f"--num_workers={workers}" if worker.num_workers or worker.max_num_workers
                     else "--num_workers not given: 1 worker (pass --num_workers=N)")
        cores = machine_cores(worker.machine_type) or 1
        if machine_cores(worker.machine_type):
            notes.append(f"--machine_type={worker.machine_type}: {cores} cores each")
        elif not config.dry_run_cores_per_worker:
            notes.append("1 core each (pass --dry_run_cores_per_worker=N or --machine_type)")
    if config.dry_run_cores_per_worker:
        cores = config.dry_run_cores_per_worker
        notes.append(f"--dry_run_cores_per_worker={cores}")
    return Cluster(runner=runner_name(beam_args), workers=workers, cores_per_worker=cores,
                   source="; ".join(notes), fanout=fanout_enabled(config.fanout, beam_args))


@dataclasses.dataclass(frozen=True)
class Estimate:
    files: int
    sampled_files: int
    complete_files: int  # of the sampled, those read to their end (counted exactly)
    input_bytes: int
    text_bytes: float
    documents: float
    tokens: float  # label positions, as the manifest counts them: document tokens + one EOS each
    bytes_per_token: dict  # subset -> measured text bytes per token (empty: assumed)
    chunks: float
    records: float
    frame_bytes: int
    shards: int
    output_bytes: float
    core_hours: float
    usable_cores: int
    wall_hours: float
    read_bound_hours: float


def estimate(samples: list[FileSample], *, inputs: list[InputFile], config: PipelineConfig,
             vocab_size: int, cluster: Cluster, tokenized: bool) -> Estimate:
    """Extrapolate ``samples`` (of some of ``inputs``) to the whole run (``tokenized``: the
    samples' token counts were measured with the model, not assumed)."""
    from pipeline.write.shard_plan import records_per_shard
    from schemas.dataset_spec import DatasetSpec
    from schemas.records import frame_bytes

    by_path = {s.file.path: s for s in samples}
    read = sum(s.text_bytes for s in samples) or 1
    pooled = {"text": sum(s.text_per_input_byte * s.file.bytes for s in samples)
              / max(1, sum(s.file.bytes for s in samples)),
              "docs": sum(s.documents for s in samples) / read,
              "tokens": sum(s.tokens for s in samples) / read}
    chunk_bytes, seq_len = config.read.chunk_bytes, config.seq_len
    half = 0.5 if config.last_record == "pad" else -0.5  # the mean effect of a chunk's tail
    totals = {"text": 0.0, "docs": 0.0, "tokens": 0.0, "chunks": 0.0, "records": 0.0,
              "largest": 0.0}
    for file in inputs:
        s = by_path.get(file.path)
        if s is not None and s.complete:
            text, docs, tokens = s.text_bytes, s.documents, s.tokens
            chunks = len(s.chunk_labels)
            rounding = math.ceil if config.last_record == "pad" else math.floor
            records = sum(rounding(labels / seq_len) for labels in s.chunk_labels)
        else:
            ratios = ({"docs": s.documents / max(1, s.text_bytes),
                       "tokens": s.tokens / max(1, s.text_bytes)} if s and s.text_bytes
                      else pooled)
            text = file.bytes * (s.text_per_input_byte if s else pooled["text"])
            docs, tokens = text * ratios["docs"], text * ratios["tokens"]
            # Chunks are cut by the bytes of their lines (JSON), not of their text.
            lines_per_text = (s.line_bytes / s.text_bytes) if s and s.text_bytes else 1.0
            chunks = math.ceil(text * lines_per_text / chunk_bytes) if text else 0
            records = max(0.0, (tokens + docs) / seq_len + chunks * half)
        for key, value in (("text", text), ("docs", docs), ("tokens", tokens + docs),
                           ("chunks", chunks), ("records", records)):
            totals[key] += value
        totals["largest"] = max(totals["largest"], text)
    spec = DatasetSpec(seq_len=seq_len, vocab_size=vocab_size, with_segments=config.segment_ids,
                       last_record=config.last_record).record
    size = frame_bytes(spec)
    per_shard = records_per_shard(shard_bytes=config.shard_bytes, frame_bytes=size)
    records = math.ceil(totals["records"])
    core_hours = totals["text"] / (per_core_rate(config) * 1e6) / 3600
    per_file = config.encode_processes or (1 if cluster.fanout else cluster.cores_per_worker)
    parallel = totals["chunks"] if cluster.fanout else len(inputs) * min(
        per_file, cluster.cores_per_worker)
    usable = max(1, int(min(cluster.workers * cluster.cores_per_worker, parallel)))
    seconds_read = sum(s.seconds for s in samples)
    read_rate = sum(s.text_bytes for s in samples) / seconds_read if seconds_read else 0
    read_bound = totals["largest"] / read_rate / 3600 if read_rate else 0.0
    measured = {}
    for s in samples:
        for subset, (text, tokens) in s.subsets.items():
            entry = measured.setdefault(subset, [0, 0])
            entry[0], entry[1] = entry[0] + text, entry[1] + tokens
    return Estimate(
        files=len(inputs), sampled_files=len(samples),
        complete_files=sum(s.complete for s in samples), input_bytes=sum(f.bytes for f in inputs),
        text_bytes=totals["text"], documents=totals["docs"], tokens=totals["tokens"],
        bytes_per_token={k: t / n for k, (t, n) in sorted(measured.items()) if n}
        if tokenized else {},
        chunks=totals["chunks"], records=records, frame_bytes=size,
        shards=-(-records // per_shard), output_bytes=records * size, core_hours=core_hours,
        usable_cores=usable,
        # Fan-out's shuffle is a barrier in batch: reading, then the rest. Without it they overlap.
        wall_hours=(read_bound + core_hours / usable if cluster.fanout
                    else max(core_hours / usable, read_bound)),
        read_bound_hours=read_bound)


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} bytes"


def _duration(hours: float) -> str:
    seconds = hours * 3600
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{hours:.1f} h"


def report(est: Estimate, *, split: str, config: PipelineConfig, cluster: Cluster) -> list[str]:
    """The dry run's printed lines."""
    head = f"[{split}] dry run"
    text = est.text_bytes
    if est.bytes_per_token:
        per_subset = ", ".join(f"{name} {value:.2f}" for name, value in
                               est.bytes_per_token.items())
        tokens_how = (f"{text / max(1, est.tokens):.2f} text bytes per token with "
                      f"{config.tokenizer_model}; measured per subset: {per_subset}")
    else:
        tokens_how = (f"ASSUMED {ASSUMED_BYTES_PER_TOKEN} text bytes per document token, "
                      "English web text; give --tokenizer_model to measure")
    return [
        (f"{head}: {est.files} input file(s), {_size(est.input_bytes)}; read the first "
         f"{SAMPLE_TEXT_BYTES >> 20} MiB of text of {est.sampled_files} of them "
         f"({est.complete_files} to their end); wrote nothing"),
        (f"{head}: text ~ {_size(text)} ({text / max(1, est.input_bytes):.2f} bytes of text per "
         f"input byte), ~ {est.documents:,.0f} documents in ~ {est.chunks:,.0f} chunk(s)"),
        f"{head}: tokens ~ {est.tokens:,.0f} ({tokens_how})",
        (f"{head}: records ~ {est.records:,.0f} of {config.seq_len + 1} tokens "
         f"({est.frame_bytes:,} bytes each) in ~ {est.shards:,} shard(s) of --shard_bytes="
         f"{config.shard_bytes:,}: output ~ {_size(est.output_bytes)}, and as much again "
         "in transient parts (.parts/) while it runs"),
        (f"{head}: compute ~ {est.core_hours:,.3g} core-hours at {per_core_rate(config)} MB "
         f"of text per core-second, --encoder={config.encoder} (measured: {THROUGHPUT_SOURCE})"),
        (f"{head}: wall ~ {_duration(est.wall_hours)} plus start-up on {cluster.workers} "
         f"worker(s) x {cluster.cores_per_worker} core(s) ({cluster.source}); {cluster.runner}, "
         f"fan-out {'on' if cluster.fanout else 'off'}: {est.usable_cores:,} core(s) usable; "
         f"of it, reading the largest file (one worker, start to end) ~ "
         f"{_duration(est.read_bound_hours)}"),
    ]


def dry_run_split(config: PipelineConfig, beam_args: list[str]) -> Estimate:
    """Sample ``config.input``, print the estimate of a run with ``config``, return it."""
    from pipeline.read.inputs import expand_inputs
    from tokenizer.encoder import CachedEncoder, load_model_bytes
    from tokenizer.model_info import parse_model

    inputs = expand_inputs(config.input)
    encoder, vocab_size = None, config.training.vocab_size
    if config.tokenizer_model:
        model = load_model_bytes(config.tokenizer_model)
        vocab_size = parse_model(model, source=config.tokenizer_model).get_piece_size()
        encoder = CachedEncoder(model_proto=model, num_threads=config.training.num_threads)
    samples = [sample_file(inputs[i], config=config.read, encoder=encoder)
               for i in sampled_indices(len(inputs))]
    cluster = cluster_from_options(config, beam_args)
    est = estimate(samples, inputs=inputs, config=config, vocab_size=vocab_size,
                   cluster=cluster, tokenized=encoder is not None)
    for line in report(est, split=config.split or "train", config=config, cluster=cluster):
        print(line)
    return est


def dry_run(config: PipelineConfig, beam_args: list[str]) -> list[Estimate]:
    """``--dry_run``: estimate the split of ``--input``, or both splits of the built-in sample."""
    if config.input:
        return [dry_run_split(config, beam_args)]
    from datagen.sample.cache import ensure_sample

    sample = ensure_sample()
    return [dry_run_split(dataclasses.replace(config, input=paths, split=split), beam_args)
            for paths, split in ((",".join(sample.train_paths), "train"),
                                 (sample.val_path, "val"))]
