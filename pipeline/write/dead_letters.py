"""Dead letters: every rejected record, as JSON Lines next to the manifest.

One file per input file with rejections: ``dead_letters/{split}-{file:05d}.jsonl``, each line
``{"file", "file_index", "line", "offset", "reason", "detail", "excerpt"}``. The excerpt is at
most 160 characters of the bad line, never the whole record.
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


def dead_letter_path(*, split: str, file_index: int) -> str:
    return f"{DIRECTORY}/{split}-{file_index:05d}.jsonl"


def write_dead_letters(letters, *, directory: str, split: str, file_index: int,
                       fence: Fence = NO_FENCE) -> DeadLetterFile:
    """All dead letters of one input file -> one file, sorted by position, committed atomically.

    Dead letters are few (bounded by --max_bad_fraction), so a file's are held in memory.
    """
    def position(letter):
        return (letter.line is not None, letter.line or 0, letter.offset or 0, letter.reason)

    ordered = sorted(letters, key=position)
    lines = [json.dumps(letter.to_json(), sort_keys=True) for letter in ordered]
    relative = dead_letter_path(split=split, file_index=file_index)
    with storage.atomic_open(storage.join(directory, relative), "wb",
                             before_commit=fence.for_file(relative)) as handle:
        handle.write(("\n".join(lines) + "\n").encode())
    return DeadLetterFile(relative, len(lines))


class WriteDeadLetters(beam.PTransform):
    """PCollection[DeadLetter] -> PCollection[DeadLetterFile], one per input file with any.

    Grouped by input file before writing, so a file's dead letters land in one file whatever
    the bundling (a retried bundle rewrites the same name with the same lines).
    """

    def __init__(self, *, directory: str, split: str, fence: Fence = NO_FENCE):
        super().__init__()
        self._directory = directory
        self._split = split
        self._fence = fence

    def expand(self, letters):
        directory, split, fence = self._directory, self._split, self._fence
        return (
            letters
            | "ByInputFile" >> beam.Map(lambda letter: (letter.file_index, letter))
            | "Group" >> beam.GroupByKey()
            | "WriteJsonLines" >> beam.MapTuple(
                lambda index, group: write_dead_letters(group, directory=directory, split=split,
                                                        file_index=index, fence=fence))
        )
