"""JSON Lines that survive a kill: the files under ``MODEL_DIR/profile/`` and their names.

Each row is appended with a single ``write(2)`` on a file opened ``O_APPEND``, with nothing
buffered in the process: a run killed at any moment (SIGTERM, SIGKILL, out of memory) leaves
everything written before the kill, in complete lines but for at most the last one (Linux cuts
a write short when a fatal signal arrives during it, and so can a full disk): the reader drops
a torn last line and says so.
"""

from __future__ import annotations

import json
import logging
import os
import threading

from common import storage
from common.errors import InputError

log = logging.getLogger(__name__)

PROFILE_DIR = "profile"  # under --model_dir
SYSTEM_FILE = "system.jsonl"  # one row per sample of the system sampler
STEPS_FILE = "steps.jsonl"  # one row per training step: input wait and compute


class JsonLinesWriter:
    """Appends one JSON object per line to a local file (thread-safe, unbuffered)."""

    def __init__(self, path: str):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def write(self, row: dict) -> None:
        data = (json.dumps(row, separators=(",", ":"), sort_keys=True) + "\n").encode()
        with self._lock:
            if self._fd is None:
                return
            view = memoryview(data)
            while view:  # one write(2) for any row we write; the loop only covers short writes
                view = view[os.write(self._fd, view):]

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read(path: str) -> list[dict]:
    """The rows of a JSON Lines file (local or any fsspec URL); [] when it does not exist.

    A last line without its newline (a write cut short) is dropped with a warning; any other
    line that is not JSON is an error naming the file and the line.
    """
    fs, stripped = storage.filesystem(path)
    if not fs.exists(stripped):
        return []
    with fs.open(stripped, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines[-1]:
        log.warning("%s: its last line is incomplete (the run was cut off); ignored", path)
    rows = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{number}: not a JSON object ({err})") from err
    return rows
