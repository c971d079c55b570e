"""The run's statistics, merged: ``Summary``, the accumulator of ``pipeline.dataset.manifest``'s
Combine, holds one total per kind of statistic the stages emit, and each total merges with
its like from another worker (``Total``: ``add`` an item, ``merge`` a total), so that any
order and any split into bundles gives the same manifest.

Which total an item joins is a function of its type (``Summary.add``); an item of another type
is an error, not a guess.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from pipeline.quality.mixture import BeforeMixture
from pipeline.quality.split_doc_hashes import DocHashFile
from pipeline.read.stage import ReadStats
from pipeline.tokenize.subset_stats import merge_into
from pipeline.write.committed_parts import ResumeCount
from pipeline.write.dead_letters import DeadLetterFile, FilterRecordFile
from pipeline.write.formats.base import FormatFile
from pipeline.write.parts import ChunkStats, PartDocuments
from pipeline.write.shards import ShardInfo
from tokenizer.guard import EncodeStats


class Total(Protocol):
    def add(self, item) -> None:
        """Count one statistic of its kind (the item unchanged)."""

    def merge(self, other) -> None:
        """Add another total of the same kind (unchanged) to this one."""


class Listed(list):
    """Every item as it came: a duplicate stays, for the manifest's checks to find."""

    def add(self, item) -> None:
        self.append(item)

    def merge(self, other: Listed) -> None:
        self.extend(other)


class Keyed(list):
    """One merged copy per key (``key(item)``), in the order the keys first came; ``empty``
    makes a key's first copy, into which every item of the key ``merge``s."""

    def __init__(self, *, key, empty):
        super().__init__()
        self._key = key
        self._empty = empty
        self._by_key: dict = {}

    def add(self, item) -> None:
        key = self._key(item)
        if key not in self._by_key:
            self._by_key[key] = self._empty(item)
            self.append(self._by_key[key])
        self._by_key[key].merge(item)

    def merge(self, other: Keyed) -> None:
        for item in other:
            self.add(item)


def _file_index(stats: ReadStats) -> int:
    return stats.file_index


def _empty_read(stats: ReadStats) -> ReadStats:
    return ReadStats(file_index=stats.file_index, path=stats.path)


def _backend(stats: EncodeStats) -> tuple[str, str, str]:
    return stats.backend, stats.version, stats.reason


def _empty_encode(stats: EncodeStats) -> EncodeStats:
    return EncodeStats(*_backend(stats))


@dataclasses.dataclass
class FileParts:
    """One input file's documents as the writers of its parts counted them."""

    documents: int = 0  # in epoch-0 parts: each document written once
    copies: int = 0  # in all its parts: each copy under a mixture
    expected_copies: int = 0  # the copies the epoch-0 parts' chunks announced

    @classmethod
    def of(cls, part: PartDocuments) -> FileParts:
        return cls(documents=part.documents if part.epoch == 0 else 0, copies=part.documents,
                   expected_copies=part.copies)

    def merge(self, other: FileParts) -> None:
        self.documents += other.documents
        self.copies += other.copies
        self.expected_copies += other.expected_copies


class PartsByFile(dict):
    """Input file index -> its ``FileParts``, from the parts' ``PartDocuments``."""

    def add(self, item: PartDocuments) -> None:
        self.setdefault(item.file_index, FileParts()).merge(FileParts.of(item))

    def merge(self, other: PartsByFile) -> None:
        for index, counts in other.items():
            self.setdefault(index, FileParts()).merge(counts)


class ByFormat(dict):
    """Format name -> its ``FormatFile``s (``pipeline.write.formats``), as they came."""

    def add(self, item: FormatFile) -> None:
        self.setdefault(item.format, []).append(item)

    def merge(self, other: ByFormat) -> None:
        for name, files in other.items():
            self.setdefault(name, []).extend(files)


class BySubset(dict):
    """Subset -> its ``SubsetStats`` before the mixture, from the chunks' ``BeforeMixture``."""

    def add(self, item: BeforeMixture) -> None:
        merge_into(self, item.subsets)

    def merge(self, other: BySubset) -> None:
        merge_into(self, other)


@dataclasses.dataclass
class Summary:
    """The merged statistics of one run (the Combine accumulator)."""

    shards: Listed = dataclasses.field(default_factory=Listed)  # ShardInfo
    dead_letters: Listed = dataclasses.field(default_factory=Listed)  # DeadLetterFile
    filter_records: Listed = dataclasses.field(default_factory=Listed)  # FilterRecordFile
    files: Keyed = dataclasses.field(  # ReadStats, merged per input file
        default_factory=lambda: Keyed(key=_file_index, empty=_empty_read))
    chunks: ChunkStats = dataclasses.field(default_factory=ChunkStats)  # packed, after mixture
    encoder: Keyed = dataclasses.field(  # EncodeStats, merged per backend
        default_factory=lambda: Keyed(key=_backend, empty=_empty_encode))
    doc_hashes: Listed = dataclasses.field(default_factory=Listed)  # DocHashFile
    before: BySubset = dataclasses.field(default_factory=BySubset)  # pre-mixture
    parts: PartsByFile = dataclasses.field(default_factory=PartsByFile)  # by file index
    # The other formats' files: format name -> its FormatFiles (pipeline.write.formats)
    format_files: ByFormat = dataclasses.field(default_factory=ByFormat)
    resume: ResumeCount = dataclasses.field(default_factory=ResumeCount)  # chunks reused

    @property
    def pack(self):
        """The summed ``pipeline.write.pack.PackStats``."""
        return self.chunks.pack

    @property
    def subsets(self) -> dict:
        """Subset -> its ``SubsetStats`` as written (after the mixture)."""
        return self.chunks.subsets

    def add(self, item) -> None:
        # A format's own file type subclasses FormatFile: the first class in its MRO decides.
        name = next((_TOTALS[cls] for cls in type(item).__mro__ if cls in _TOTALS), None)
        if name is None:
            raise TypeError(f"no manifest total counts a {type(item).__name__}: {item!r}")
        getattr(self, name).add(item)

    def merge(self, other: Summary) -> None:
        for field in dataclasses.fields(self):
            getattr(self, field.name).merge(getattr(other, field.name))


# The total (a Summary field) each kind of statistic joins.
_TOTALS = {
    ShardInfo: "shards", DeadLetterFile: "dead_letters", FilterRecordFile: "filter_records",
    ReadStats: "files",
    ChunkStats: "chunks", EncodeStats: "encoder", DocHashFile: "doc_hashes",
    BeforeMixture: "before", PartDocuments: "parts", FormatFile: "format_files",
    ResumeCount: "resume",
}
