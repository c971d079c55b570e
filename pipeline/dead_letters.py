"""Dead letters: every rejected record, as JSON Lines next to the manifest.

One file per input file with rejections: ``dead_letters/{split}-{file:05d}.jsonl``, each line
``{"file", "file_index", "line", "offset", "reason", "detail", "excerpt"}``. The excerpt is at
most 160 characters of the bad line, never the whole record.
"""

from __future__ import annotations

import dataclasses
import json

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from common import storage

DIRECTORY = "dead_letters"


@dataclasses.dataclass(frozen=True)
class DeadLetterFile:
    path: str  # relative to the dataset directory
    records: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def dead_letter_path(*, split: str, file_index: int) -> str:
    return f"{DIRECTORY}/{split}-{file_index:05d}.jsonl"


class _WriteDeadLettersFn(beam.DoFn):
    def __init__(self, *, directory: str, split: str):
        self._directory = directory
        self._split = split

    def start_bundle(self):
        self._lines: dict[int, list[str]] = {}

    def process(self, letter):
        self._lines.setdefault(letter.file_index, []).append(
            json.dumps(letter.to_json(), sort_keys=True)
        )

    def finish_bundle(self):
        # Dead letters are few (bounded by --max_bad_fraction), so a file's are held in memory
        # and written in one atomic commit.
        for file_index, lines in sorted(self._lines.items()):
            relative = dead_letter_path(split=self._split, file_index=file_index)
            with storage.atomic_open(storage.join(self._directory, relative), "wb") as handle:
                handle.write(("\n".join(lines) + "\n").encode())
            yield WindowedValue(DeadLetterFile(relative, len(lines)), 0, [GlobalWindow()])
        self._lines = {}


class WriteDeadLetters(beam.PTransform):
    """PCollection[DeadLetter] -> PCollection[DeadLetterFile]."""

    def __init__(self, *, directory: str, split: str):
        super().__init__()
        self._fn = _WriteDeadLettersFn(directory=directory, split=split)

    def expand(self, letters):
        return letters | "WriteJsonLines" >> beam.ParDo(self._fn)
