"""Log-spaced histograms of per-document sizes, mergeable, for the manifest and the report.

Bin ``k`` holds values in ``[2**(k/2), 2**((k+1)/2))``: edges a factor √2 apart from 1 up to
2**40, so one fixed set of bins covers a one-word document and a whole book, and histograms
from any number of chunks add up bin by bin (the result does not depend on how the work was
split). Values below 1 count in bin 0.
"""

from __future__ import annotations

import math

NUM_BINS = 80


def bin_of(value: float) -> int:
    if value < 1:
        return 0
    return min(NUM_BINS - 1, int(2 * math.log2(value)))


def edge(k: int) -> float:
    return 2 ** (k / 2)


def add(counts: list[int], value: float) -> None:
    """Count ``value`` into ``counts`` (a list of NUM_BINS ints)."""
    counts[bin_of(value)] += 1


def empty() -> list[int]:
    return [0] * NUM_BINS


def merged(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b)]


def to_json(counts: list[int]) -> dict:
    """``{"edges": [...], "counts": [...]}`` over the bins from the first to the last non-empty
    one (``len(edges) == len(counts) + 1``); empty when nothing was counted."""
    used = [k for k, n in enumerate(counts) if n]
    if not used:
        return {"edges": [], "counts": []}
    first, last = used[0], used[-1]
    return {"edges": [round(edge(k), 3) for k in range(first, last + 2)],
            "counts": counts[first:last + 1]}
