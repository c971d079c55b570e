"""The data-quality options in ``--dry_run``: mixture weights, the pre-pass's time.

* ``--dedup``, ``--decontaminate``: which sampled documents drop, and why, is
  ``pipeline.launch.dry_run.drops`` (duplicates within the sample only: a lower bound).
* ``--subset_weights``: the run's weights (``pipeline.config.mixture_weights``);
  ``--subset_tokens``: ``budget / tokens`` with the tokens of the kept documents estimated from
  the sample, as the pre-pass counts them (``pipeline.quality.mixture.weights_from_budgets``).
* The pre-pass (``--dedup``, ``--exclude_docs_from``, ``--decontaminate`` or
  ``--subset_tokens``: the run's plan, ``pipeline.quality.plan``) reads every input file once
  more, hashes its documents, for ``--dedup=near`` signs them (MinHash), for
  ``--decontaminate`` looks their n-grams up and, for a budget, tokenizes them: its CPU time
  is the sample's own, measured while sampling, per byte of text; its wall time assumes a file
  per core (the pre-pass reads each file on one worker). Not included: near dedup's banding
  and components (shuffles of the signatures), reading the evaluation sets.
* ``--exclude_docs_from``: what it removes is not estimated (0 assumed; said so), nor the
  time to read its sources.
"""

from __future__ import annotations

import dataclasses

from pipeline.config import PipelineConfig, mixture_weights
from pipeline.launch.dry_run.sample import FileSample
from pipeline.quality import mixture
from pipeline.quality.plan import TOKENS, QualityPlan


@dataclasses.dataclass(frozen=True)
class Weights:
    """The mixture's weights and how they were found."""

    weights: dict
    how: str  # '' without a mixture


def flag_weights(plan: QualityPlan, *, flag_value: str) -> Weights:
    """``--subset_weights`` (``flag_value``, as given) as the run parses it: the plan's weights
    (none for ``--subset_tokens`` yet)."""
    if plan.mixture in ("", TOKENS):
        return Weights(weights={}, how="")
    name = "the Pile paper's" if plan.mixture == mixture_weights.PILE_V1_NAME else "given"
    return Weights(weights=plan.weights,
                   how=f"--subset_weights={flag_value} ({name} epochs per subset)")


def budget_weights(plan: QualityPlan, *, tokens: dict[str, float], exact: bool) -> Weights:
    """``--subset_tokens``: weight = budget / the subset's estimated tokens (kept documents).
    ``exact``: every file was read to its end, so a budget naming a subset the input lacks is
    the run's own error; otherwise such a subset is only missing from the sample, and noted."""
    budgets = plan.budgets
    unseen = sorted(name for name in budgets if not tokens.get(name))
    if exact or not unseen:
        weights = mixture.weights_from_budgets(budgets, tokens)  # ConfigError as the run's
    else:
        weights = mixture.weights_from_budgets(
            {k: v for k, v in budgets.items() if k not in unseen}, tokens)
    counted = "counted" if exact else "estimated from the sample"
    how = f"--subset_tokens: weight = budget / the subset's tokens, {counted} as the pre-pass would"
    if unseen and not exact:
        how += f"; {', '.join(unseen)} not in the sample: weight 1 assumed"
    return Weights(weights=weights, how=how)


@dataclasses.dataclass(frozen=True)
class PrepassCost:
    core_hours: float
    wall_hours: float
    how: str


def prepass_cost(samples: list[FileSample], *, config: PipelineConfig, plan: QualityPlan,
                 file_texts: list[float], cores: int,
                 tokenize_mb_per_cpu_second: float | None) -> PrepassCost | None:
    """The pre-pass's CPU and wall time over files of ``file_texts`` text bytes on ``cores``
    cores, at the samples' measured CPU seconds per text byte of reading and of the stages the
    plan runs (and of tokenizing with a budget: measured with the model, else
    ``tokenize_mb_per_cpu_second``); None when the plan has no pre-pass."""
    if not plan.prepass_runs:
        return None
    text = sum(s.text_bytes for s in samples) or 1
    per_byte = {"read": sum(s.read_cpu for s in samples) / text}
    if plan.groups_by_hash:
        per_byte["hash"] = sum(s.hash_cpu for s in samples) / text
    if plan.near is not None:
        per_byte["sign"] = sum(s.minhash_cpu for s in samples) / text
    if plan.decontaminate is not None:
        per_byte["scan"] = sum(s.scan_cpu for s in samples) / text
    if plan.counts_tokens:
        per_byte["tokenize"] = (sum(s.encode_cpu for s in samples) / text
                                if config.tokenizer_model or not tokenize_mb_per_cpu_second
                                else 1 / (tokenize_mb_per_cpu_second * 1e6))
    seconds_per_byte = sum(per_byte.values())
    core_hours = sum(file_texts) * seconds_per_byte / 3600
    usable = max(1, min(cores, len(file_texts)))
    wall = max(core_hours / usable, max(file_texts, default=0) * seconds_per_byte / 3600)
    rates = ", ".join(f"{name} {1 / value / 1e6:.1f}" for name, value in per_byte.items()
                      if value)
    how = (f"CPU per text MB measured on this machine while sampling ({rates} MB per "
           f"CPU-second); one file per core, {usable} core(s)")
    if "tokenize" in per_byte and not config.tokenizer_model:
        how += "; tokenizing at the pipeline's per-core rate (no --tokenizer_model to time)"
    return PrepassCost(core_hours=core_hours, wall_hours=wall, how=how)
