"""What Read accounts for besides documents: a rejected record (``DeadLetter``) and one input
file's counts (``ReadStats``), which the manifest's accounting adds up."""

from __future__ import annotations

import collections
import dataclasses


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    file: str
    file_index: int
    line: int | None
    offset: int | None  # byte offset in the decompressed stream (compressed for stream errors)
    reason: str
    detail: str
    excerpt: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ReadStats:
    """Per-file accounting. ``lines`` is Read's own count of the lines it split (blank ones
    included), set only by ``read_lines``; the other counts are made downstream of it (Parse,
    the selection), so ``lines == accounted_lines()`` holds only if every chunk of lines was
    parsed exactly once (``pipeline.dataset.manifest.check_lines_accounted``)."""

    file_index: int
    path: str
    format: str = ""
    lines: int = 0
    stream_errors: int = 0  # rejections of the stream, not of a line (also in ``rejected``)
    documents: int = 0  # documents passed on to tokenization
    filtered: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    rejected: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # (reason, subset) -> documents, for pipeline.quality.selection's reasons (manifest: quality)
    filtered_by_subset: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)

    def merge(self, other: ReadStats) -> None:
        """Add ``other``'s counts (another part of the same file) to these."""
        self.format = self.format or other.format
        self.lines += other.lines
        self.stream_errors += other.stream_errors
        self.documents += other.documents
        self.filtered.update(other.filtered)
        self.rejected.update(other.rejected)
        self.filtered_by_subset.update(other.filtered_by_subset)

    def accounted_lines(self) -> int:
        """Lines counted after the split: written + filtered (blank ones included) + rejected,
        less the rejections of the stream itself, which are not lines."""
        return (self.documents + sum(self.filtered.values()) + sum(self.rejected.values())
                - self.stream_errors)
