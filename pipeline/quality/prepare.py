"""The launcher's side of the data-quality options: check them, run the pre-pass, and hand
the main pipeline its constructor arguments (``QualityRun``).

``resolve`` runs before anything is written (a wrong ``--exclude_docs_from`` fails in
seconds); ``prepare`` runs after the tokenizer is ready. The pre-pass
(``pipeline.quality.prepass``) runs only when it has work: ``--dedup``,
``--exclude_docs_from``, ``--decontaminate`` or ``--subset_tokens``;
``--subset_weights`` alone needs none (each document's repeats follow from its subset, the
seed and its position).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from common import storage
from pipeline.config import PipelineConfig, mixture_weights
from pipeline.quality import decision_files
from pipeline.quality import eval_sets, mixture
from pipeline.quality.decontaminate import DecontaminateOptions, read_report
from pipeline.quality.exclusion import ExclusionSources
from pipeline.quality.exclusion import resolve as resolve_sources
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.selection import Selection

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class QualityRun:
    """Everything the main pipeline and its manifest need from the data-quality options."""

    selection: Selection | None = None  # None: every document read is written, once
    dedup: str = "off"
    exclude_docs_from: tuple[str, ...] = ()
    excluded_hashes: int = 0  # distinct hashes found in --exclude_docs_from
    near_dup: dict = dataclasses.field(default_factory=dict)  # --dedup=near: options, stats
    decontamination: dict = dataclasses.field(default_factory=dict)  # --decontaminate's report
    mixture: str = ""  # "", "pile-v1", "weights" or "tokens"
    weights: dict = dataclasses.field(default_factory=dict)
    budgets: dict = dataclasses.field(default_factory=dict)
    prepass_subsets: dict = dataclasses.field(default_factory=dict)  # kept: documents, tokens
    prepass_seconds: float = 0.0
    shuffle: str = "off"
    seed: int = 0


def resolve(config: PipelineConfig, inputs) -> ExclusionSources:
    """Check ``--exclude_docs_from`` against the inputs and output, and that every
    ``--decontaminate`` file exists (no data is read)."""
    _decontaminate_options(config, inputs)
    return resolve_sources(config.quality.exclude_docs_from, inputs=inputs, output=config.output)


def _decontaminate_options(config: PipelineConfig, inputs) -> DecontaminateOptions | None:
    options = config.quality
    if not options.decontaminate:
        return None
    files = eval_sets.resolve(options.decontaminate, field=options.decontaminate_field,
                              inputs=inputs)
    return DecontaminateOptions(files=files, names=options.decontaminate,
                                n=options.decontaminate_ngram, mode=options.decontaminate_mode,
                                field=options.decontaminate_field)


def _mixture_source(value: str) -> str:
    if not value:
        return ""
    return mixture_weights.PILE_V1_NAME if value == mixture_weights.PILE_V1_NAME else "weights"


def run_prepass(config: PipelineConfig, *, inputs, sources: ExclusionSources, model_path: str,
                beam_args: list[str], fanout: bool,
                run_job: Callable[[object], object] | None = None) -> dict:
    """Run the pre-pass pipeline; return its ``totals.json``. ``fanout``: as the main
    pipeline's (``pipeline.launch.beam_options.fanout_enabled``). ``run_job`` runs the pipeline
    to its end (the launcher's binds its job to the output's claim); None:
    ``p.run().wait_until_finish()``."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.quality.prepass import FindDrops

    directory = storage.join(config.output, decision_files.QUALITY_DIR)
    decision_files.clear(directory)
    budgets = mixture_weights.parse_budgets(config.quality.subset_tokens)
    p = beam.Pipeline(options=PipelineOptions(beam_args))
    (p | "ListInputs" >> beam.Create(inputs)
     | "FindDrops" >> FindDrops(
         config=config.read, paths=tuple(f.path for f in inputs), directory=directory,
         dedup=config.quality.dedup != "off", fanout=fanout,
         hash_files=sources.hash_files, raw_files=sources.raw_files,
         model_path=model_path if budgets else None, encoder=config.encoder,
         num_threads=config.encoder_threads,
         near=NearDupOptions.from_config(config.quality) if config.quality.dedup == "near"
         else None, decontaminate=_decontaminate_options(config, inputs)))
    if run_job is None:
        p.run().wait_until_finish()
    else:
        run_job(p)
    return decision_files.read_totals(directory)


def prepare(config: PipelineConfig, *, inputs, sources: ExclusionSources, model_path: str,
            beam_args: list[str], fanout: bool,
            run_job: Callable[[object], object] | None = None) -> QualityRun | None:
    """Run the pre-pass if needed (``fanout``, ``run_job``: see ``run_prepass``); None when no
    data-quality option is given."""
    options = config.quality
    seed = config.training.seed
    if not options.active:
        return None
    weights = mixture_weights.parse_weights(options.subset_weights)
    budgets = mixture_weights.parse_budgets(options.subset_tokens)
    run = QualityRun(dedup=options.dedup, exclude_docs_from=options.exclude_docs_from,
                     mixture="tokens" if budgets else _mixture_source(options.subset_weights),
                     weights=weights, budgets=budgets, shuffle=options.shuffle, seed=seed)
    decisions = None
    if options.dedup != "off" or sources or budgets or options.decontaminate:
        started = time.time()
        totals = run_prepass(config, inputs=inputs, sources=sources, model_path=model_path,
                             beam_args=beam_args, fanout=fanout, run_job=run_job)
        seconds = time.time() - started
        log.info("quality pre-pass: %.1f s, %d excluded hashes", seconds,
                 totals["excluded_hashes"])
        if options.dedup != "off" or sources or options.decontaminate:
            decisions = storage.join(config.output, decision_files.QUALITY_DIR)
        if budgets:
            tokens = {name: row["tokens"] for name, row in totals["subsets"].items()}
            weights = mixture.weights_from_budgets(budgets, tokens)
        run = dataclasses.replace(run, excluded_hashes=totals["excluded_hashes"],
                                  prepass_subsets=totals["subsets"],
                                  near_dup=totals.get("near_dup", {}),
                                  decontamination=read_report(decisions) if options.decontaminate
                                  else {},
                                  prepass_seconds=round(seconds, 3), weights=weights)
    selection = None
    if decisions or run.weights:
        selection = Selection(decisions=decisions, weights=run.weights, seed=seed,
                              redact=options.decontaminate_mode == "redact"
                              and bool(options.decontaminate))
    return dataclasses.replace(run, selection=selection)
