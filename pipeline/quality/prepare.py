"""The launcher's side of the data-quality options: run the pre-pass the plan asks for,
and hand the main pipeline its constructor arguments (``QualityRun``).

The plan (``pipeline.quality.plan.plan_quality``) is made before anything is written (a wrong
``--exclude_docs_from`` fails in seconds); ``prepare`` runs after the tokenizer is ready. The
pre-pass (``pipeline.quality.prepass``) runs only when it has work
(``QualityPlan.prepass_runs``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from common import storage
from pipeline.config import PipelineConfig
from pipeline.quality import committed_prepass, decision_files, mixture
from pipeline.quality.decontaminate import read_report
from pipeline.quality.plan import QualityPlan
from pipeline.quality.selection import Selection
from schemas.claim import NO_FENCE, Fence

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class QualityRun:
    """Everything the main pipeline and its manifest need from the data-quality options: the
    plan, and what the pre-pass found."""

    plan: QualityPlan
    selection: Selection | None = None  # None: every document read is written, once
    excluded_hashes: int = 0  # distinct hashes found in --exclude_docs_from
    near_dup: dict = dataclasses.field(default_factory=dict)  # --dedup=near: options, stats
    decontamination: dict = dataclasses.field(default_factory=dict)  # --decontaminate's report
    weights: dict = dataclasses.field(default_factory=dict)  # applied: the plan's or budgets'
    prepass_subsets: dict = dataclasses.field(default_factory=dict)  # kept: documents, tokens
    prepass_seconds: float = 0.0
    prepass_reused: bool = False  # a dead run's committed outputs (committed_prepass)


def run_prepass(config: PipelineConfig, *, plan: QualityPlan, inputs, model_path: str | None,
                beam_args: list[str], fanout: bool,
                run_job: Callable[[object], object] | None = None,
                fence: Fence = NO_FENCE, fingerprint: str = "") -> dict:
    """Run the pre-pass pipeline ``plan`` asks for; return its ``totals.json``. ``model_path``:
    the tokenizer, to count tokens with (only when the plan counts them); ``fanout``: as the
    main pipeline's (``pipeline.launch.beam_options.fanout_enabled``). ``run_job`` runs the
    pipeline to its end (the launcher's binds its job to the output's claim); None:
    ``p.run().wait_until_finish()``. ``fence``: checked before each file the job commits
    (``schemas.claim.Fence``). Its outputs are committed for a rerun as ``fingerprint``'s
    (``pipeline.quality.committed_prepass``; "": not committed)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.quality.prepass import FindDrops

    directory = storage.join(config.output, decision_files.QUALITY_DIR)
    decision_files.clear(directory)
    p = beam.Pipeline(options=PipelineOptions(beam_args))
    (p | "ListInputs" >> beam.Create(inputs)
     | "FindDrops" >> FindDrops(
         plan=plan, config=config.read, paths=tuple(f.path for f in inputs),
         directory=directory, fanout=fanout,
         model_path=model_path if plan.counts_tokens else None, encoder=config.encoder,
         num_threads=config.encoder_threads, fence=fence))
    if run_job is None:
        p.run().wait_until_finish()
    else:
        run_job(p)
    totals = decision_files.read_totals(directory)
    committed_prepass.commit(directory, fingerprint=fingerprint, fence=fence)
    return totals


def prepare(config: PipelineConfig, *, plan: QualityPlan, inputs, model_path: str | None,
            beam_args: list[str], fanout: bool,
            run_job: Callable[[object], object] | None = None,
            fence: Fence = NO_FENCE, fingerprint: str = "") -> QualityRun | None:
    """Run the pre-pass if the plan has one (``fanout``, ``run_job``, ``fence``,
    ``fingerprint``: see ``run_prepass``), unless a dead run committed its outputs for the same
    ``fingerprint`` (with ``config.resume``); None when no data-quality option is given."""
    if not plan.active:
        return None
    run = QualityRun(plan=plan, weights=plan.weights)
    decisions = None
    if plan.prepass_runs:
        started = time.time()
        directory = storage.join(config.output, decision_files.QUALITY_DIR)
        reused = config.resume and committed_prepass.committed(directory,
                                                               fingerprint=fingerprint)
        if reused:
            log.info("resume: reusing the quality pre-pass outputs a dead run committed")
            totals = decision_files.read_totals(directory)
        else:
            totals = run_prepass(config, plan=plan, inputs=inputs, model_path=model_path,
                                 beam_args=beam_args, fanout=fanout, run_job=run_job,
                                 fence=fence, fingerprint=fingerprint)
        seconds = time.time() - started
        log.info("quality pre-pass: %.1f s, %d excluded hashes", seconds,
                 totals["excluded_hashes"])
        if plan.decides:
            decisions = storage.join(config.output, decision_files.QUALITY_DIR)
        weights = plan.weights
        if plan.counts_tokens:
            tokens = {name: row["tokens"] for name, row in totals["subsets"].items()}
            weights = mixture.weights_from_budgets(plan.budgets, tokens)
        run = dataclasses.replace(run, excluded_hashes=totals["excluded_hashes"],
                                  prepass_subsets=totals["subsets"],
                                  near_dup=totals.get("near_dup", {}),
                                  decontamination=read_report(decisions)
                                  if plan.decontaminate is not None else {},
                                  prepass_seconds=round(seconds, 3), weights=weights,
                                  prepass_reused=reused)
    selection = None
    if decisions or run.weights:
        selection = Selection(decisions=decisions, weights=run.weights, seed=plan.seed)
    return dataclasses.replace(run, selection=selection)
