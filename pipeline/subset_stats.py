"""Per-``pile_set_name`` statistics: counted per chunk by Tokenize, summed for the manifest."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping


@dataclasses.dataclass
class SubsetStats:
    """One subset's totals (the manifest's ``subsets.<name>``)."""

    documents: int = 0
    bytes: int = 0  # UTF-8 bytes of text
    tokens: int = 0
    lossy_documents: int = 0  # holding U+2581, which decodes as a space

    def add(self, other: "SubsetStats") -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def merge_into(total: dict[str, SubsetStats], part: Mapping[str, SubsetStats]) -> None:
    """Add ``part``'s subsets into ``total`` (a fresh entry per new subset; ``part`` unchanged)."""
    for name, stats in part.items():
        total.setdefault(name, SubsetStats()).add(stats)


def summed(stats: Iterable[SubsetStats]) -> SubsetStats:
    total = SubsetStats()
    for item in stats:
        total.add(item)
    return total
