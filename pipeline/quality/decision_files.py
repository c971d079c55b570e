"""What the quality pre-pass hands to the main pipeline: one decision file per input file.

``<output>/.quality/{file:05d}.drops`` lists the lines of that input file whose documents the
main pipeline drops, with the reason, sorted by line: an 8-byte little-endian count ``n``,
then ``n`` uint64 line numbers, then ``n`` uint8 reason codes (``REASON_CODES``). Every input
file gets one (empty when nothing drops), so a missing file is an error, never "keep all".
``totals.json`` holds the pre-pass's per-subset totals of the documents it keeps. The
directory is deleted when the manifest is committed, like ``.parts/``.

A reader looks a line up by binary search (``np.searchsorted``) in the sorted line array, so
chunks may arrive in any order and memory is the decision arrays (9 bytes per dropped
document), not a set of hashes.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from common import storage
from common.errors import DataError
from schemas.claim import NO_FENCE, Fence

QUALITY_DIR = ".quality"
TOTALS_NAME = "totals.json"
DUPLICATE = "duplicate"
CONTAMINATED = "contaminated"
NEAR_DUPLICATE = "near_duplicate"
DECONTAMINATED = "decontaminated"  # --decontaminate: holds an evaluation n-gram (drop)
REDACTED = "redacted"  # --decontaminate_mode=redact: kept, its evaluation n-grams cut by Parse
MIXTURE = "mixture"  # a repeat count of 0 (pipeline.quality.mixture); decided by Parse
REASON_CODES = {DUPLICATE: 1, CONTAMINATED: 2, NEAR_DUPLICATE: 3, DECONTAMINATED: 4,
                REDACTED: 5}
_REASONS = {code: reason for reason, code in REASON_CODES.items()}


def decision_path(directory: str, file_index: int) -> str:
    return storage.join(directory, f"{file_index:05d}.drops")


def write_decisions(drops, *, directory: str, file_index: int, fence: Fence = NO_FENCE) -> str:
    """``drops``: (line, reason) pairs of one input file, in any order; written sorted. A
    line both ``redacted`` and dropped (a duplicate of another document, say) drops."""
    rows = sorted(drops)
    if any(reason == REDACTED for _, reason in rows):
        dropped = {line for line, reason in rows if reason != REDACTED}
        rows = [row for row in rows if row[1] != REDACTED or row[0] not in dropped]
    for (line, _), (following, _) in zip(rows, rows[1:]):
        if line == following:
            raise ValueError(f"input file {file_index}: line {line} decided twice")
    lines = np.array([line for line, _ in rows], dtype="<u8")
    codes = np.array([REASON_CODES[reason] for _, reason in rows], dtype="u1")
    path = decision_path(directory, file_index)
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write(struct.pack("<Q", len(rows)) + lines.tobytes() + codes.tobytes())
    return path


class Decisions:
    """One input file's drops, looked up by line (``reason(line)``)."""

    def __init__(self, lines: np.ndarray, codes: np.ndarray):
        self._lines = lines
        self._codes = codes

    @classmethod
    def load(cls, directory: str, file_index: int) -> "Decisions":
        path = decision_path(directory, file_index)
        fs, stripped = storage.filesystem(path)
        try:
            with fs.open(stripped, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise DataError(f"{path}: the quality pre-pass wrote no decision file for input "
                            f"file {file_index} (removed during the run?): rerun") from None
        count = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else -1
        if count < 0 or len(data) != 8 + 9 * count:
            raise DataError(f"{path}: {len(data)} bytes is not a decision file (truncated or "
                            "changed during the run?): rerun")
        lines = np.frombuffer(data, dtype="<u8", count=count, offset=8)
        codes = np.frombuffer(data, dtype="u1", count=count, offset=8 + 8 * count)
        return cls(lines, codes)

    def __len__(self) -> int:
        return len(self._lines)

    def reason(self, line: int) -> str | None:
        """The reason ``line`` drops, or None (lines may be asked in any order)."""
        at = int(np.searchsorted(self._lines, line))
        if at < len(self._lines) and self._lines[at] == line:
            return _REASONS[int(self._codes[at])]
        return None


def write_totals(totals: dict, *, directory: str, fence: Fence = NO_FENCE) -> str:
    path = storage.join(directory, TOTALS_NAME)
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write(json.dumps(totals, sort_keys=True).encode())
    return path


def read_totals(directory: str) -> dict:
    path = storage.join(directory, TOTALS_NAME)
    fs, stripped = storage.filesystem(path)
    if not fs.exists(stripped):
        raise DataError(f"{path}: the quality pre-pass finished without its totals: rerun")
    with fs.open(stripped, "rb") as handle:
        return json.loads(handle.read())


def clear(directory: str) -> None:
    fs, stripped = storage.filesystem(directory)
    if fs.exists(stripped):
        fs.rm(stripped, recursive=True)
