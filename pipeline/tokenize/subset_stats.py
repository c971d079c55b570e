"""Per-``pile_set_name`` statistics: counted per chunk by Tokenize, summed for the manifest."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from pipeline.tokenize import histogram


@dataclasses.dataclass
class SubsetStats:
    """One subset's totals (the manifest's ``subsets.<name>``)."""

    documents: int = 0
    bytes: int = 0  # UTF-8 bytes of text
    tokens: int = 0
    lossy_documents: int = 0  # holding U+2581, which decodes as a space
    # Log-spaced histograms (pipeline.tokenize.histogram) of document length and of tokens per
    # document.
    bytes_histogram: list = dataclasses.field(default_factory=histogram.empty, compare=False)
    tokens_histogram: list = dataclasses.field(default_factory=histogram.empty, compare=False)

    def count_document(self, *, text_bytes: int, tokens: int, lossy: bool) -> None:
        self.documents += 1
        self.bytes += text_bytes
        self.tokens += tokens
        self.lossy_documents += lossy
        histogram.add(self.bytes_histogram, text_bytes)
        histogram.add(self.tokens_histogram, tokens)

    def add(self, other: "SubsetStats") -> None:
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, list):
                setattr(self, field.name, histogram.merged(mine, theirs))
            else:
                setattr(self, field.name, mine + theirs)

    def to_json(self) -> dict:
        """The manifest's ``subsets.<name>`` entry (histograms go to ``histograms``)."""
        return {"documents": self.documents, "bytes": self.bytes, "tokens": self.tokens,
                "lossy_documents": self.lossy_documents}


def merge_into(total: dict[str, SubsetStats], part: Mapping[str, SubsetStats]) -> None:
    """Add ``part``'s subsets into ``total`` (a fresh entry per new subset; ``part`` unchanged)."""
    for name, stats in part.items():
        total.setdefault(name, SubsetStats()).add(stats)


def summed(stats: Iterable[SubsetStats]) -> SubsetStats:
    total = SubsetStats()
    for item in stats:
        total.add(item)
    return total
