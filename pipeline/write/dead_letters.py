"""Dead letters: every rejected record, as JSON Lines next to the manifest.

One file per input file with rejections: ``dead_letters/{split}-{file:05d}.jsonl``, each line
``{"file", "file_index", "line", "offset", "reason", "detail", "excerpt"}``. The excerpt is at
most 160 characters of the bad line, never the whole record.

With ``--filters``, the documents the quality filters removed: one file per chunk with any,
``dead_letters/filtered/{split}-{file:05d}-{chunk:05d}.jsonl``, each line a
``pipeline.read.filter_records.FilterRecord`` (reason ``filtered``, the first ``rule`` failed).
"""

from __future__ import annotations

import dataclasses
import json

import apache_beam as beam

from common import storage
from schemas.claim import NO_FENCE, Fence

DIRECTORY = "dead_letters"


@dataclasses.dataclass(frozen=True)
class DeadLetterFile:
    path: str  # relative to the dataset directory
    records: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class FilterRecordFile(DeadLetterFile):
    """A file of filter records (the manifest's ``filters.records``, not ``dead_letters``)."""


def dead_letter_path(*, split: str, file_index: int) -> str:
    return f"{DIRECTORY}/{split}-{file_index:05d}.jsonl"


def filter_records_path(*, split: str, file_index: int, chunk_index: int) -> str:
    return f"{DIRECTORY}/filtered/{split}-{file_index:05d}-{chunk_index:05d}.jsonl"


def write_dead_letters(letters, *, directory: str, split: str, file_index: int,
                       chunk_index: int | None = None,
                       fence: Fence = NO_FENCE) -> DeadLetterFile:
    """All dead letters of one input file -> one file, sorted by position, committed atomically.

    Dead letters are few (bounded by --max_bad_fraction), so a file's are held in memory.
    With ``chunk_index``: filter records, one chunk's (bounded by --chunk_bytes).
    """
    def position(letter):
        return (letter.line is not None, letter.line or 0, letter.offset or 0, letter.reason)

    ordered = sorted(letters, key=position)
    lines = [json.dumps(letter.to_json(), sort_keys=True) for letter in ordered]
    if chunk_index is None:
        relative = dead_letter_path(split=split, file_index=file_index)
    else:
        relative = filter_records_path(split=split, file_index=file_index,
                                       chunk_index=chunk_index)
    with storage.atomic_open(storage.join(directory, relative), "wb",
                             before_commit=fence.for_file(relative)) as handle:
        handle.write(("\n".join(lines) + "\n").encode())
    kind = DeadLetterFile if chunk_index is None else FilterRecordFile
    return kind(relative, len(lines))


class WriteDeadLetters(beam.PTransform):
    """PCollection[DeadLetter] -> PCollection[DeadLetterFile], one per input file with any;
    with ``by_chunk``, PCollection[FilterRecord] -> PCollection[FilterRecordFile], one per
    chunk with any.

    Grouped by input file (or chunk) before writing, so its records land in one file whatever
    the bundling (a retried bundle rewrites the same name with the same lines). A chunk's
    filter records are bounded by --chunk_bytes, whatever the corpus size or how many
    documents the filters remove.
    """

    def __init__(self, *, directory: str, split: str, by_chunk: bool = False,
                 fence: Fence = NO_FENCE):
        super().__init__()
        self._directory = directory
        self._split = split
        self._by_chunk = by_chunk
        self._fence = fence

    def expand(self, letters):
        directory, split, fence = self._directory, self._split, self._fence
        if self._by_chunk:
            def key(letter):
                return letter.file_index, letter.chunk_index
        else:
            def key(letter):
                return letter.file_index, None
        return (
            letters
            | ("ByChunk" if self._by_chunk else "ByInputFile") >> beam.Map(
                lambda letter: (key(letter), letter))
            | "Group" >> beam.GroupByKey()
            | "WriteJsonLines" >> beam.MapTuple(
                lambda index, group: write_dead_letters(group, directory=directory, split=split,
                                                        file_index=index[0],
                                                        chunk_index=index[1], fence=fence))
        )
