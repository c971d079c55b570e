"""Progress of a running split, seen from the launching process, whatever the runner.

Each written part leaves a small sidecar, ``.parts/<part>.progress.json``: the chunk's documents,
text bytes and tokens, and the compressed input bytes it consumed (its range of its input file,
``pipeline.read.stage.Chunk``). The launcher polls the sidecars (``Watcher``): done = the sum of
the counts; consumed input = the sum of the finished chunks' input bytes, so chunks finishing in
any order (a fan-out, many workers) never move the bar past the work done; percent and ETA =
consumed / total compressed input. (A chunk with no document written leaves no part, so its bytes
are never counted: the bar may stop short of 100%, never run ahead.) So progress works the same
for the in-process DirectRunner, its worker processes and a cluster writing to S3, and needs
nothing from the runner. A terminal gets a ``rich`` progress bar;
anything else one log line about every ``LOG_EVERY_S`` seconds.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time

from common import storage
from pipeline.write.shard_plan import PARTS_DIR
from schemas.claim import NO_FENCE, Fence

log = logging.getLogger("pilepack.progress")

SUFFIX = ".progress.json"
LOG_EVERY_S = 10.0
POLL_S = {"local": 1.0, "object_store": 10.0}  # listing an object store costs requests


def write_sidecar(directory: str, part: str, *, file_index: int, input_bytes: int,
                  documents: int, text_bytes: int, tokens: int,
                  fence: Fence = NO_FENCE) -> None:
    row = {"file": file_index, "input_bytes": input_bytes, "documents": documents,
           "text_bytes": text_bytes, "tokens": tokens}
    with storage.atomic_open(storage.join(directory, part + SUFFIX), "wb",
                             before_commit=fence.for_file(part + SUFFIX)) as handle:
        handle.write(json.dumps(row).encode())


class Tally:
    """What the sidecars seen so far add up to (pure: tests feed it rows)."""

    def __init__(self, *, total_input_bytes: int):
        self.total = max(1, total_input_bytes)
        self.documents = self.text_bytes = self.tokens = self._input_bytes = 0

    def add(self, row: dict) -> None:
        # Every field read before any is added: a row missing one (KeyError) changes nothing.
        documents, text_bytes, tokens, input_bytes = (
            row["documents"], row["text_bytes"], row["tokens"], row["input_bytes"])
        self.documents += documents
        self.text_bytes += text_bytes
        self.tokens += tokens
        self._input_bytes += input_bytes

    @property
    def consumed(self) -> int:
        return min(self.total, self._input_bytes)

    @property
    def fraction(self) -> float:
        return self.consumed / self.total

    def line(self, seconds: float) -> str:
        rate = self.text_bytes / 1e6 / seconds if seconds > 0 else 0.0
        eta = ""
        if 0 < self.fraction < 1:
            left = seconds * (1 - self.fraction) / self.fraction
            eta = f", ETA {int(left // 60)}m{int(left % 60):02d}s"
        return (f"{self.fraction:.1%} of the input ({self.consumed / 1e6:,.1f} of "
                f"{self.total / 1e6:,.1f} MB compressed): {self.documents:,} documents, "
                f"{self.text_bytes / 1e6:,.1f} MB of text, {self.tokens:,} tokens, "
                f"{rate:.2f} MB/s{eta}")


class Watcher:
    """Polls ``<output>/.parts`` in a daemon thread while the pipeline runs (``with`` block)."""

    def __init__(self, *, output: str, split: str, total_input_bytes: int,
                 poll_s: float | None = None, tty: bool | None = None):
        self._fs, root = storage.filesystem(storage.join(output, PARTS_DIR))
        self._root = root.rstrip("/")
        self._split = split
        self.tally = Tally(total_input_bytes=total_input_bytes)
        self._seen: set[str] = set()
        self._poll_s = poll_s or POLL_S["object_store" if storage.is_object_store(self._fs)
                                        else "local"]
        self._tty = sys.stderr.isatty() if tty is None else tty
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pilepack-progress", daemon=True)

    def __enter__(self) -> "Watcher":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def poll(self) -> None:
        try:
            paths = [p for p in self._fs.find(self._root) if p.endswith(SUFFIX)]
        except (OSError, FileNotFoundError):
            return
        for path in paths:
            if path in self._seen:
                continue
            try:
                with self._fs.open(path, "rb") as handle:
                    self.tally.add(json.loads(handle.read()))
            except (OSError, ValueError, KeyError):
                continue  # removed at the commit, or being written: the next poll sees it
            self._seen.add(path)

    def _run(self) -> None:
        if self._tty:
            self._run_bar()
            return
        last = time.monotonic()
        while not self._stop.wait(self._poll_s):
            self.poll()
            now = time.monotonic()
            if now - last >= LOG_EVERY_S and self.tally.documents:
                log.info("[%s] %s", self._split, self.tally.line(now - self._started))
                last = now

    def _run_bar(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        columns = (TextColumn(f"[{self._split}]", markup=False), BarColumn(),
                   TextColumn("{task.percentage:>5.1f}%"),
                   TextColumn("{task.fields[detail]}", markup=False), TimeRemainingColumn())
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task(self._split, total=self.tally.total, detail="")
            while not self._stop.wait(min(self._poll_s, 1.0)):
                self.poll()
                t = self.tally
                seconds = time.monotonic() - self._started
                bar.update(task, completed=t.consumed, detail=(
                    f"{t.documents:,} docs, {t.text_bytes / 1e6:,.1f} MB, {t.tokens:,} tokens, "
                    f"{t.text_bytes / 1e6 / max(seconds, 1e-9):.2f} MB/s"))
