"""Why a document is removed: the first rule it fails, what was measured and the threshold."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Failure:
    rule: str  # a name of pipeline.filters.rules.RULES
    value: float  # what the rule measured on the document
    threshold: float | None  # the threshold it broke (None: a rule without one)

    def detail(self) -> str:
        """``"gopher_min_words: 12 (threshold 50)"``: the dead letters' detail."""
        limit = "" if self.threshold is None else f" (threshold {self.threshold:g})"
        return f"{self.rule}: {self.value:.4g}{limit}"


def below(rule: str, value: float, active) -> Failure | None:
    """A Failure if ``rule`` is active and ``value`` is under its threshold."""
    threshold = active.get(rule)
    if rule in active and value < threshold:
        return Failure(rule, value, threshold)
    return None


def above(rule: str, value: float, active) -> Failure | None:
    """A Failure if ``rule`` is active and ``value`` is over its threshold."""
    threshold = active.get(rule)
    if rule in active and value > threshold:
        return Failure(rule, value, threshold)
    return None
