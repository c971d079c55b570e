"""What the quality pre-pass hands to the main pipeline: one decision file per input file.

``<output>/.quality/{file:05d}.drops`` lists the lines of that input file whose documents the
main pipeline drops (or, ``redacted``, cuts), with the reason, sorted by line; all integers
little-endian:

1. a uint64 count ``n``, then ``n`` uint64 line numbers, then ``n`` uint8 reason codes
   (``REASON_CODES``);
2. only if ``r`` > 0 of the codes are ``redacted``: ``r`` uint64 span ends (the ``k``-th
   redacted line's spans are spans ``ends[k-1]`` (0 for the first) to ``ends[k]``), then
   ``s = ends[r-1]`` (start, end) uint64 pairs: the character offsets that line's document
   loses (``pipeline.quality.ngrams.cut``), sorted and disjoint.

So a file of drops only is ``8 + 9n`` bytes, ``8 + 9n + 8r + 16s`` with redactions. Every
input file gets one (empty when nothing drops), so a missing file is an error, never "keep
all". ``totals.json`` holds the pre-pass's per-subset totals of the documents it keeps. The
directory is deleted when the manifest is committed, like ``.parts/``.

A reader looks a line up by binary search (``np.searchsorted``) in the sorted line array, so
chunks may arrive in any order and memory is the decision arrays (9 bytes per dropped
document; a redacted one 16 more, and 16 a span), not a set of hashes or n-grams.
"""

from __future__ import annotations

import itertools
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


def redaction(line: int, spans: np.ndarray) -> tuple:
    """A ``redacted`` decision: ``line``'s document loses the (start, end) character ``spans``
    (sorted, disjoint; ``ngrams.Match.spans``)."""
    return line, REDACTED, np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def write_decisions(drops, *, directory: str, file_index: int, fence: Fence = NO_FENCE) -> str:
    """``drops``: (line, reason) pairs of one input file, and ``redaction``s, in any order;
    written sorted. A line both ``redacted`` and dropped (a duplicate of another document,
    say) drops."""
    rows = sorted(drops, key=lambda row: row[:2])
    if any(row[1] == REDACTED for row in rows):
        dropped = {row[0] for row in rows if row[1] != REDACTED}
        rows = [row for row in rows if row[1] != REDACTED or row[0] not in dropped]
    for row, following in itertools.pairwise(rows):
        if row[0] == following[0]:
            raise ValueError(f"input file {file_index}: line {row[0]} decided twice")
    lines = np.array([row[0] for row in rows], dtype="<u8")
    codes = np.array([REASON_CODES[row[1]] for row in rows], dtype="u1")
    spans = [row[2] for row in rows if row[1] == REDACTED]
    cuts = b""
    if spans:  # drops alone keep the 8 + 9n layout
        ends = np.cumsum([len(s) for s in spans], dtype=np.int64).astype("<u8")
        cuts = ends.tobytes() + np.concatenate(spans).astype("<u8").tobytes()
    path = decision_path(directory, file_index)
    with storage.atomic_open(path, "wb", before_commit=fence.for_file(path)) as handle:
        handle.write(struct.pack("<Q", len(rows)) + lines.tobytes() + codes.tobytes() + cuts)
    return path


class Decisions:
    """One input file's drops, looked up by line (``reason(line)``), and the spans a
    ``redacted`` line loses (``spans(line)``)."""

    def __init__(self, lines: np.ndarray, codes: np.ndarray, ends: np.ndarray | None = None,
                 spans: np.ndarray | None = None):
        self._lines = lines
        self._codes = codes
        self._redacted = np.flatnonzero(codes == REASON_CODES[REDACTED])  # rows, sorted
        self._ends = np.empty(0, np.uint64) if ends is None else ends
        self._spans = np.empty((0, 2), np.uint64) if spans is None else spans

    @classmethod
    def load(cls, directory: str, file_index: int) -> Decisions:
        path = decision_path(directory, file_index)
        fs, stripped = storage.filesystem(path)
        try:
            with fs.open(stripped, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise DataError(f"{path}: the quality pre-pass wrote no decision file for input "
                            f"file {file_index} (removed during the run?): rerun") from None
        damaged = DataError(f"{path}: {len(data)} bytes is not a decision file (truncated "
                            "or changed during the run?): rerun")
        count = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else -1
        if count < 0 or len(data) < 8 + 9 * count:
            raise damaged
        lines = np.frombuffer(data, dtype="<u8", count=count, offset=8)
        codes = np.frombuffer(data, dtype="u1", count=count, offset=8 + 8 * count)
        at = 8 + 9 * count
        redacted = int((codes == REASON_CODES[REDACTED]).sum())
        if not redacted:
            if len(data) != at:
                raise damaged
            return cls(lines, codes)
        if len(data) < at + 8 * redacted:
            raise damaged
        ends = np.frombuffer(data, dtype="<u8", count=redacted, offset=at)
        spans = int(ends[-1])
        if len(data) != at + 8 * redacted + 16 * spans or (np.diff(ends.astype(np.int64)) < 0
                                                            ).any():
            raise damaged
        pairs = np.frombuffer(data, dtype="<u8", count=2 * spans,
                              offset=at + 8 * redacted).reshape(-1, 2)
        return cls(lines, codes, ends, pairs)

    def __len__(self) -> int:
        return len(self._lines)

    def reason(self, line: int) -> str | None:
        """The reason ``line`` drops, or None (lines may be asked in any order)."""
        at = int(np.searchsorted(self._lines, line))
        if at < len(self._lines) and self._lines[at] == line:
            return _REASONS[int(self._codes[at])]
        return None

    def spans(self, line: int) -> np.ndarray:
        """The (start, end) character spans ``line``'s document loses, an (n, 2) int64 array;
        ``line`` must be ``redacted`` (``reason``)."""
        row = int(np.searchsorted(self._lines, line))
        k = int(np.searchsorted(self._redacted, row))
        if k == len(self._redacted) or self._redacted[k] != row or self._lines[row] != line:
            raise KeyError(f"line {line} is not redacted")
        start = int(self._ends[k - 1]) if k else 0
        return self._spans[start:int(self._ends[k])].astype(np.int64)


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
