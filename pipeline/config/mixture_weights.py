"""The values of ``--subset_weights`` and ``--subset_tokens``: parsed and checked with the config.

The flags are checked when the config is built, before anything runs, so the parsing lives here,
under the config; ``pipeline.quality.mixture`` applies the weights (see its docstring).
"""

from __future__ import annotations

import json
import math

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
