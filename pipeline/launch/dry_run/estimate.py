"""``python -m pipeline.run --dry_run``: what a run would cost, from a small sample; writes nothing.

It lists the inputs, reads the start of up to 16 of them (evenly spaced;
``pipeline.launch.dry_run.sample``) and extrapolates (``pipeline.launch.dry_run.figures``):

* text bytes per input byte, per file, and the number of documents;
* tokens: with ``--tokenizer_model`` the sample is tokenized by the backend the run would use
  (built as ``--encoder`` builds it: ``auto`` takes gigatoken only when it encodes the model
  exactly) and bytes per token measured per subset; without one, ``ASSUMED_BYTES_PER_TOKEN``
  is assumed (and said so);
* the data-quality options (``pipeline.launch.dry_run.drops``, ``.quality``): exact
  and near duplicates within the sample (a lower bound), documents holding evaluation n-grams
  (``--decontaminate``: the evaluation sets are read here), the mixture's copies
  (``--subset_weights``, ``--subset_tokens``), the pre-pass's time;
* records, shards and output bytes from the packing rules (``pipeline.write.pack``,
  ``pipeline.write.shard_plan``): exact for files read to their end, whose chunks are rebuilt
  and whose copies are the run's own draws;
* core-hours at the measured text MB per CPU-second of that backend, read from the rates file
  (``pipeline.launch.dry_run.rates``: ``pipeline/launch/dry_run/rates.json``), and wall time on
  Beam's ``--num_workers`` workers of ``--dry_run_cores_per_worker`` cores (else the cores of
  ``--machine_type``, e.g. ``n2-standard-8`` -> 8), capped by the parallelism the run can use
  (chunks with fan-out, files without), plus reading the largest file, which one worker does
  start to end: with fan-out the shuffle is a barrier in batch runs, so tokenizing starts once
  every file is read; plus the pre-pass, which runs before.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import re

from common.errors import ConfigError
from pipeline.config import PipelineConfig
from pipeline.launch.dry_run.drops import SampleDrops, sample_drops
from pipeline.launch.dry_run.figures import Figures, Packing, run_figures, summed
from pipeline.launch.dry_run.quality import (
    PrepassCost,
    Weights,
    budget_weights,
    flag_weights,
    prepass_cost,
)
from pipeline.launch.dry_run.rates import RATES_PATH, Rate, load_rate
from pipeline.launch.dry_run.report import report
from pipeline.launch.dry_run.sample import (
    FileSample,
    SampleChecks,
    sample_file,
    sampled_indices,
)
from pipeline.quality.decision_files import DUPLICATE
from pipeline.quality.mixture import mixture_table
from pipeline.quality.plan import QualityPlan, plan_quality
from pipeline.read.inputs import InputFile

_MACHINE_CORES = (re.compile(r"^(?:[a-z0-9]+-)?custom-(\d+)-\d+(?:-ext)?$"),  # custom-8-32768
                  re.compile(r"^[a-z][a-z0-9]*-[a-z]+-(\d+)(?:-[a-z0-9]+)?$"))  # n2-standard-8


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
class Backend:
    """The encoder backend the run would use, and how the dry run knows."""

    name: str  # gigatoken | sentencepiece, as the manifest's encoder.backends names it
    how: str


def probe_backend(config: PipelineConfig, model: bytes | None):
    """(Backend, the encoder to tokenize the sample with or None): built from the model as
    ``--encoder`` builds it (``tokenizer.backends.open_backend``; ConfigError as the run's when
    the named backend cannot encode it); without a model, the one ``auto`` picks for a model
    this run trains (BPE with byte fallback, ``tokenizer.spec``)."""
    from tokenizer.backends import AUTO, open_backend

    if model is not None:
        opened = open_backend(config.encoder, model_proto=model,
                              num_threads=config.encoder_threads)
        how = f"built from --tokenizer_model as --encoder={config.encoder} builds it"
        if opened.reason:
            how += f"; passed over: {opened.reason}"
        return Backend(opened.backend.name, how), opened.backend
    if config.encoder == "sentencepiece":
        return Backend("sentencepiece", "--encoder=sentencepiece"), None
    if importlib.util.find_spec("gigatoken") is None:
        if config.encoder != AUTO:
            raise ConfigError("--encoder=gigatoken: gigatoken is not installed; install it or "
                              "use --encoder=auto")
        return Backend("sentencepiece", "--encoder=auto: gigatoken is not installed"), None
    return Backend("gigatoken", f"--encoder={config.encoder}, predicted: the model this run "
                   "trains (BPE with byte fallback) is one gigatoken encodes exactly"), None


@dataclasses.dataclass(frozen=True)
class Estimate:
    files: int
    sampled_files: int
    complete_files: int  # of the sampled, those read to their end (counted exactly)
    input_bytes: int
    text_bytes: float  # of the documents read (the selected subsets)
    documents: float  # read
    duplicates: float  # of those, dropped as exact duplicates (--dedup; else 0)
    dropped: dict  # reason -> documents the pre-pass drops (duplicates among them)
    drops: SampleDrops  # what the sample itself showed (near dedup, contamination)
    sampled_documents: int
    sampled_text_bytes: int
    written_documents: float  # copies counted, as the manifest's totals.documents
    written_text_bytes: float  # as totals.text_bytes
    tokens: float  # label positions written, as totals.tokens: document tokens + one EOS each
    tokens_read: float  # the same of the documents read, once each (before dedup, mixture)
    subsets: dict  # the manifest's mixture.subsets rows (pipeline.quality.mixture.mixture_table)
    weights: Weights
    bytes_per_token: dict  # subset -> measured text bytes per token (empty: assumed)
    chunks: float
    records: float
    frame_bytes: int
    shards: int
    output_bytes: float
    core_hours: float  # the main pipeline's
    prepass: PrepassCost | None  # the quality pre-pass's, when it runs
    usable_cores: int
    wall_hours: float  # the pre-pass's, then the main pipeline's
    read_bound_hours: float
    backend: Backend
    rate: Rate
    plan: QualityPlan  # the data-quality stages the figures follow


def _quality_figures(samples: list[FileSample], *, inputs: list[InputFile],
                     config: PipelineConfig,
                     plan: QualityPlan) -> tuple[list[Figures], Weights, SampleDrops]:
    """Each file's figures with the pre-pass's drops and the mixture applied, the weights
    used, and the drops in the sample."""
    drops = sample_drops(samples, plan=plan)
    packing = Packing(seq_len=config.seq_len, last_record=config.last_record,
                      chunk_bytes=config.read.chunk_bytes)
    weights = flag_weights(plan, flag_value=config.quality.subset_weights)
    figures = run_figures(samples, inputs=inputs, drops=drops.reasons,
                          weights=weights.weights, seed=plan.seed, packing=packing)
    if plan.counts_tokens:  # the budgets need the kept tokens first
        kept = {name: counts.tokens for name, counts in summed(figures).before.items()}
        exact = len(inputs) == sum(s.complete for s in samples)
        weights = budget_weights(plan, tokens=kept, exact=exact)
        figures = run_figures(samples, inputs=inputs, drops=drops.reasons,
                              weights=weights.weights, seed=plan.seed, packing=packing)
    return figures, weights, drops


def _layout(total: Figures, *, config: PipelineConfig, vocab_size: int) -> dict:
    """Records, their size, shards and output bytes, as the writer lays them out."""
    from pipeline.write.shard_plan import records_per_shard
    from schemas.dataset_spec import DatasetSpec
    from schemas.records import frame_bytes

    spec = DatasetSpec(seq_len=config.seq_len, vocab_size=vocab_size,
                       with_segments=config.segment_ids, last_record=config.last_record).record
    size = frame_bytes(spec)
    per_shard = records_per_shard(shard_bytes=config.shard_bytes, frame_bytes=size)
    records = math.ceil(total.records)
    return {"records": records, "frame_bytes": size, "shards": -(-records // per_shard),
            "output_bytes": records * size}


def _timing(figures: list[Figures], samples: list[FileSample], *, config: PipelineConfig,
            plan: QualityPlan, cluster: Cluster, rate: Rate) -> dict:
    """Core-hours, usable cores, wall time (pre-pass included) and the read bound."""
    total = summed(figures)
    core_hours = total.text / (rate.text_mb_per_cpu_second * 1e6) / 3600
    per_file = config.encode_processes or (1 if cluster.fanout else cluster.cores_per_worker)
    parallel = total.chunks if cluster.fanout else len(figures) * min(
        per_file, cluster.cores_per_worker)
    cores = cluster.workers * cluster.cores_per_worker
    usable = max(1, int(min(cores, parallel)))
    seconds_read = sum(s.seconds for s in samples)
    read_rate = sum(s.text_bytes for s in samples) / seconds_read if seconds_read else 0
    largest = max((fig.text for fig in figures), default=0.0)
    read_bound = largest / read_rate / 3600 if read_rate else 0.0
    prepass = prepass_cost(samples, config=config, plan=plan,
                           file_texts=[fig.text for fig in figures], cores=cores,
                           tokenize_mb_per_cpu_second=rate.text_mb_per_cpu_second)
    # Fan-out's shuffle is a barrier in batch: reading, then the rest. Without it they overlap.
    wall = (read_bound + core_hours / usable if cluster.fanout
            else max(core_hours / usable, read_bound))
    return {"core_hours": core_hours, "usable_cores": usable, "read_bound_hours": read_bound,
            "prepass": prepass, "wall_hours": wall + (prepass.wall_hours if prepass else 0)}


def estimate(samples: list[FileSample], *, inputs: list[InputFile], config: PipelineConfig,
             plan: QualityPlan, vocab_size: int, cluster: Cluster, tokenized: bool,
             backend: Backend, rate: Rate) -> Estimate:
    """Extrapolate ``samples`` (of some of ``inputs``) to the whole run (``plan``: its
    data-quality plan; ``tokenized``: the samples' token counts were measured with the model,
    not assumed)."""
    figures, weights, drops = _quality_figures(samples, inputs=inputs, config=config,
                                               plan=plan)
    total = summed(figures)
    written = total.written()
    table = mixture_table(
        weights=weights.weights,
        before={k: {"documents": c.documents, "tokens": c.tokens} for k, c in total.before.items()},
        after={k: {"documents": c.documents, "tokens": c.tokens} for k, c in total.after.items()},
        budgets=plan.budgets)
    measured = {}
    for s in samples:
        for subset, (text, tokens) in s.subsets.items():
            entry = measured.setdefault(subset, [0, 0])
            entry[0], entry[1] = entry[0] + text, entry[1] + tokens
    return Estimate(
        files=len(inputs), sampled_files=len(samples),
        complete_files=sum(s.complete for s in samples), input_bytes=sum(f.bytes for f in inputs),
        text_bytes=total.text, documents=total.documents,
        duplicates=total.dropped.get(DUPLICATE, 0.0), dropped=dict(sorted(total.dropped.items())),
        drops=drops, sampled_documents=sum(s.documents for s in samples),
        sampled_text_bytes=sum(s.text_bytes for s in samples),
        written_documents=written.documents, written_text_bytes=written.text,
        tokens=written.tokens + written.documents, tokens_read=total.tokens + total.documents,
        subsets=table, weights=weights,
        bytes_per_token={k: t / n for k, (t, n) in sorted(measured.items()) if n}
        if tokenized else {},
        chunks=total.chunks, **_layout(total, config=config, vocab_size=vocab_size),
        **_timing(figures, samples, config=config, plan=plan, cluster=cluster, rate=rate),
        backend=backend, rate=rate, plan=plan)


def sample_checks(plan: QualityPlan) -> SampleChecks:
    """The per-document checks the plan's stages need: MinHash options (near dedup), the
    evaluation sets' n-grams (``--decontaminate``: every evaluation file the plan resolved,
    read here, as the pre-pass's workers read them)."""
    from pipeline.quality import decontaminate

    near = plan.near.minhash if plan.near is not None else None
    options = plan.decontaminate
    if options is None:
        return SampleChecks(minhash=near)
    return SampleChecks(minhash=near, eval_set=decontaminate.whole_eval_set(options),
                        redact=plan.redacts)


def dry_run_split(config: PipelineConfig, beam_args: list[str], *,
                  rates_path: str = RATES_PATH) -> Estimate:
    """Sample ``config.input``, print the estimate of a run with ``config``, return it
    (``rates_path``: the rates file, ``pipeline.launch.dry_run.rates``)."""
    from pipeline.read.inputs import expand_inputs
    from tokenizer.encoder import load_model_bytes
    from tokenizer.model_info import parse_model

    inputs = expand_inputs(config.input)
    model, vocab_size = None, config.training.vocab_size
    if config.tokenizer_model:
        model = load_model_bytes(config.tokenizer_model)
        vocab_size = parse_model(model, source=config.tokenizer_model).get_piece_size()
    backend, encoder = probe_backend(config, model)
    rate = load_rate(backend.name, path=rates_path)
    plan = plan_quality(config, inputs=inputs)  # as the run plans it: the same files
    checks = sample_checks(plan)
    samples = [sample_file(inputs[i], config=config.read, encoder=encoder, checks=checks)
               for i in sampled_indices(len(inputs))]
    cluster = cluster_from_options(config, beam_args)
    est = estimate(samples, inputs=inputs, config=config, plan=plan, vocab_size=vocab_size,
                   cluster=cluster, tokenized=encoder is not None, backend=backend, rate=rate)
    for line in report(est, split=config.split or "train", config=config, cluster=cluster):
        print(line)
    return est


def dry_run(config: PipelineConfig, beam_args: list[str], *,
            rates_path: str = RATES_PATH) -> list[Estimate]:
    """``--dry_run``: estimate the split of ``--input``, or both splits of the built-in sample."""
    if config.input:
        return [dry_run_split(config, beam_args, rates_path=rates_path)]
    from pipeline.launch.builtin_sample import builtin_splits

    return [dry_run_split(dataclasses.replace(config, input=split.input, split=split.name),
                          beam_args, rates_path=rates_path)
            for split in builtin_splits()]
