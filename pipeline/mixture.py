"""Mixture weights per ``pile_set_name``: epochs, token budgets, and each document's repeats.

A weight ``w`` is epochs: how many times, on average, each document of the subset is written.
Each document gets an integer repeat count, deterministic from the seed and its position::

    r = floor(w) + (1 if u < frac(w) else 0),   u = uniform(seed, input file, line) in [0, 1)

so ``w = 2.5`` writes every document twice and half of them (chosen by ``u``) a third time;
``w = 0.25`` keeps about a quarter of them once. The resampling is per *document* (whole
documents, never cut), and the expected number of tokens written is ``w`` times the subset's
tokens; the manifest records what it really was.

Weights come from ``--subset_weights`` (a JSON object of epochs, or ``pile-v1``: the Pile
paper's own, ``PILE_V1``) or from ``--subset_tokens`` (a JSON object of token budgets): then
``w = budget / tokens``, the tokens of the subset's documents counted by the quality pre-pass
(``pipeline.quality``). Subsets not named keep weight 1.

Worked example (tests assert it): weights ``{"A": 2.5}`` and the u of 4 documents of subset A
``0.1, 0.7, 0.4, 0.9`` -> repeats ``3, 2, 3, 2``: 10 copies of 4 documents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import struct

from common.errors import ConfigError

PILE_V1_NAME = "pile-v1"
# Gao et al. (2020), "The Pile: An 800GB Dataset of Diverse Text for Language Modeling",
# arXiv:2101.00027, Table 1, column "Epochs", keyed by the pile_set_name each subset carries
# in the Pile's files (the table writes "Stack Exchange"; the files "StackExchange").
PILE_V1 = {
    "Pile-CC": 1.0,
    "PubMed Central": 2.0,
    "Books3": 1.5,
    "OpenWebText2": 2.0,
    "ArXiv": 2.0,
    "Github": 1.0,
    "FreeLaw": 1.5,
    "StackExchange": 2.0,
    "USPTO Backgrounds": 2.0,
    "PubMed Abstracts": 2.0,
    "Gutenberg (PG-19)": 2.5,
    "OpenSubtitles": 1.5,
    "Wikipedia (en)": 3.0,
    "DM Mathematics": 2.0,
    "Ubuntu IRC": 2.0,
    "BookCorpus2": 1.5,
    "EuroParl": 2.0,
    "HackerNews": 2.0,
    "YoutubeSubtitles": 2.0,
    "PhilPapers": 2.0,
    "NIH ExPorter": 2.0,
    "Enron Emails": 2.0,
}
MAX_WEIGHT = 1000.0  # a repeat count beyond this is a typo, not a mixture


def _json_numbers(value: str, *, flag: str, what: str) -> dict[str, float]:
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--{flag} is not valid JSON ({err.msg} at column {err.colno}): "
                          f"give an object of {what} per subset, e.g. "
                          '\'{"Github": 2, "Pile-CC": 0.5}\'') from None
    if not isinstance(doc, dict):
        raise ConfigError(f"--{flag} must be a JSON object of {what} per subset, got "
                          f"{type(doc).__name__}")
    out = {}
    for name, number in doc.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)) \
                or not math.isfinite(number) or number < 0:
            raise ConfigError(f"--{flag}: {what} of {name!r} must be a finite number >= 0, got "
                              f"{number!r}")
        out[name] = float(number)
    return dict(sorted(out.items()))


def parse_weights(value: str) -> dict[str, float]:
    """``--subset_weights``: ``""`` (none), ``pile-v1``, or a JSON object of epochs."""
    if not value:
        return {}
    if value == PILE_V1_NAME:
        return dict(sorted(PILE_V1.items()))
    weights = _json_numbers(value, flag="subset_weights", what="epochs")
    for name, weight in weights.items():
        if weight > MAX_WEIGHT:
            raise ConfigError(f"--subset_weights: {weight} epochs of {name!r} is more than "
                              f"{MAX_WEIGHT:g}; check the value")
    return weights


def parse_budgets(value: str) -> dict[str, int]:
    """``--subset_tokens``: ``""`` (none) or a JSON object of token budgets (``2e9`` allowed)."""
    if not value:
        return {}
    return {name: int(round(n)) for name, n in
            _json_numbers(value, flag="subset_tokens", what="tokens").items()}


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

    subsets: dict  # subset -> pipeline.subset_stats.SubsetStats
