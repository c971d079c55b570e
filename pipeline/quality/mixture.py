"""Mixture weights per ``pile_set_name``: epochs, token budgets, and each document's repeats.

A weight ``w`` is epochs: how many times, on average, each document of the subset is written.
Each document gets an integer repeat count, deterministic from the seed and its position::

    r = floor(w) + (1 if u < frac(w) else 0),   u = uniform(seed, input file, line) in [0, 1)

so ``w = 2.5`` writes every document twice and half of them (chosen by ``u``) a third time;
``w = 0.25`` keeps about a quarter of them once. The resampling is per *document* (whole
documents, never cut), and the expected number of tokens written is ``w`` times the subset's
tokens; the manifest records what it really was.

Weights come from ``--subset_weights`` (a JSON object of epochs, or ``pile-v1``: the Pile
paper's own, ``pipeline.config.mixture_weights.PILE_V1``) or from ``--subset_tokens`` (a JSON
object of token budgets): then ``w = budget / tokens``, the tokens of the subset's documents
counted by the quality pre-pass (``pipeline.quality.prepass``). Subsets not named keep
weight 1.

Worked example (tests assert it): weights ``{"A": 2.5}`` and the u of 4 documents of subset A
``0.1, 0.7, 0.4, 0.9`` -> repeats ``3, 2, 3, 2``: 10 copies of 4 documents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import struct

from common.errors import ConfigError


def weights_from_budgets(budgets: dict[str, int], tokens: dict[str, int]) -> dict[str, float]:
    """Epochs that meet each budget in expectation: ``budget / tokens`` per named subset.

    Raises:
      ConfigError: a budget names a subset with no tokens in the input (a typo, most likely).
    """
    missing = sorted(name for name in budgets if not tokens.get(name))
    if missing:
        present = ", ".join(sorted(name for name, n in tokens.items() if n)) or "none"
        raise ConfigError(f"--subset_tokens names {missing}, which have no tokens in --input "
                          f"(its subsets: {present}); check the names")
    return {name: budget / tokens[name] for name, budget in sorted(budgets.items())}


def uniform(*, seed: int, file_index: int, line: int) -> float:
    """A document's u in [0, 1): the same for the same seed, input file and line."""
    digest = hashlib.blake2b(f"mixture:{seed}:{file_index}:{line}".encode(), digest_size=8)
    return struct.unpack("<Q", digest.digest())[0] / 2**64


def repeats(weight: float, u: float) -> int:
    """floor(w), plus one more when u < frac(w)."""
    whole = math.floor(weight)
    return whole + (1 if u < weight - whole else 0)


def repeat_count(weights: dict[str, float], *, subset: str, seed: int, file_index: int,
                 line: int) -> int:
    """How many copies of a document are written (subsets not in ``weights`` keep 1)."""
    weight = weights.get(subset, 1.0)
    if weight == 1.0:
        return 1
    return repeats(weight, uniform(seed=seed, file_index=file_index, line=line))


def mixture_table(*, weights: dict[str, float], before: dict, after: dict,
                  budgets: dict[str, int] | None = None) -> dict:
    """The manifest's ``mixture.subsets``: per subset, documents and tokens before and after,
    the weight applied and the resulting share of the split's tokens."""
    total_after = sum(stats["tokens"] for stats in after.values()) or 1
    table = {}
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name, {}), after.get(name, {})
        row = {
            "weight": weights.get(name, 1.0),
            "documents_before": b.get("documents", 0),
            "tokens_before": b.get("tokens", 0),
            "documents_after": a.get("documents", 0),
            "tokens_after": a.get("tokens", 0),
            "token_share": round(a.get("tokens", 0) / total_after, 6),
        }
        if budgets and name in budgets:
            row["token_budget"] = budgets[name]
        table[name] = row
    return table


@dataclasses.dataclass(frozen=True)
class BeforeMixture:
    """One chunk's per-subset statistics before its documents were repeated (every kept
    document once, those with 0 copies included), on their way to the manifest."""

    subsets: dict  # subset -> pipeline.tokenize.subset_stats.SubsetStats
