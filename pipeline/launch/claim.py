"""One run per ``--output``: a run claims the directory before it writes anything.

The claim is ``.pilepack-claim.json`` (run id, host, pid, start time), created exclusively:
``O_CREAT | O_EXCL`` on local and mounted file systems (EFS included), a conditional
``PUT`` (``If-None-Match: *``) on S3. A second run finds it and refuses, naming the holder;
``--overwrite`` replaces a complete dataset, never a live run. A claim whose holder is gone
(a dead pid on this host) or that is older than ``STALE_AFTER_HOURS`` is taken over with a
warning: a killed run must not block its rerun. The manifest records the run id, and a run
reports success only if the committed manifest carries its own.

Object stores without conditional writes (fsspec's memory filesystem, S3-compatible stores
that ignore ``If-None-Match``) leave a window between "is there a claim?" and "write mine";
the manifest's run id check still catches a lost race at the end.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import socket
import time
import uuid

from common import storage
from common.errors import PilepackError

log = logging.getLogger(__name__)

CLAIM_NAME = ".pilepack-claim.json"
STALE_AFTER_HOURS = 48.0  # longer than any run of one split should take


class OutputClaimed(PilepackError):
    """Another live run holds --output, or replaced this run's dataset."""


@dataclasses.dataclass(frozen=True)
class Claim:
    run_id: str
    host: str
    pid: int
    started: str  # ISO 8601, UTC
    started_unix: float

    @classmethod
    def new(cls) -> "Claim":
        now = time.time()
        return cls(run_id=uuid.uuid4().hex, host=socket.gethostname(), pid=os.getpid(),
                   started=datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
                   .isoformat(timespec="seconds"), started_unix=now)

    def describe(self) -> str:
        return f"run {self.run_id} (host {self.host}, pid {self.pid}, started {self.started})"


def stale_reason(holder: Claim, *, now: float | None = None) -> str | None:
    """Why ``holder`` no longer holds the output, or None while it may still be running."""
    age_hours = ((now or time.time()) - holder.started_unix) / 3600
    if age_hours > STALE_AFTER_HOURS:
        return f"it is {age_hours:.0f} h old (> {STALE_AFTER_HOURS:.0f} h)"
    if holder.host == socket.gethostname() and not _alive(holder.pid):
        return f"its process {holder.pid} on this host is gone"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def _create_exclusive(path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists; False when it does."""
    fs, stripped = storage.filesystem(path)
    fs.makedirs(stripped.rsplit("/", 1)[0], exist_ok=True)
    if storage.is_local(fs):
        try:
            fd = os.open(stripped, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return True
    if storage.protocol(fs) == "s3":
        try:
            with fs.open(stripped, "xb") as handle:  # If-None-Match: *
                handle.write(data)
        except FileExistsError:
            return False
        return True
    if fs.exists(stripped):  # no conditional write here: see the module docstring
        return False
    fs.pipe_file(stripped, data)
    return True


def _read(path: str) -> Claim | None:
    fs, stripped = storage.filesystem(path)
    try:
        with fs.open(stripped, "rb") as handle:
            return Claim(**json.loads(handle.read()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):  # unreadable: a claim cut short by a crash
        return Claim(run_id="unknown", host="unknown", pid=-1, started="unknown",
                     started_unix=0.0)


def claim(output: str) -> Claim:
    """Claim ``output`` for this run, taking over a stale claim; OutputClaimed if held."""
    path = storage.join(output, CLAIM_NAME)
    mine = Claim.new()
    data = json.dumps(dataclasses.asdict(mine), sort_keys=True).encode()
    for _ in range(3):
        if _create_exclusive(path, data):
            return mine
        holder = _read(path)
        if holder is None:  # released meanwhile
            continue
        reason = stale_reason(holder)
        if reason is None:
            raise OutputClaimed(
                f"{output} is being written by {holder.describe()}; wait for it to finish or "
                f"choose another --output (--overwrite does not replace a running job; a claim "
                f"whose process is gone, or older than {STALE_AFTER_HOURS:.0f} h, is taken over; "
                f"remove {path} only if you know that run is dead)")
        log.warning("taking over the claim of %s on %s: %s", holder.describe(), output, reason)
        release(output, holder)
    raise OutputClaimed(f"{output}: could not claim it; other runs keep claiming it")


def release(output: str, held: Claim) -> None:
    """Remove the claim if it is still ``held`` (never another run's)."""
    path = storage.join(output, CLAIM_NAME)
    current = _read(path)
    if current is not None and current.run_id == held.run_id:
        fs, stripped = storage.filesystem(path)
        try:
            fs.rm(stripped)
        except FileNotFoundError:
            pass
