"""The quality pre-pass's outputs committed for a rerun: a run that dies after its pre-pass keeps
``.quality/``, and its rerun (the same command) skips the pre-pass job.

``.quality/committed.json`` is written atomically *after* the pre-pass job has finished (its
decision files and ``totals.json`` complete), so its presence means they are all there. It holds
the run's fingerprint (``pipeline.launch.resume.run_fingerprint``: options, inputs, tokenizer,
format version); a rerun reuses the outputs only for the same fingerprint, else it runs the
pre-pass again, which first clears the directory. The directory goes when the manifest is
committed.
"""

from __future__ import annotations

import json
import logging

from common import storage
from schemas.claim import NO_FENCE, Fence

log = logging.getLogger(__name__)

COMMITTED_NAME = "committed.json"


def commit(directory: str, *, fingerprint: str, fence: Fence = NO_FENCE) -> None:
    """Record that the pre-pass outputs in ``directory`` (complete) are those of
    ``fingerprint``'s run ("": nothing is recorded, nothing could be reused)."""
    if not fingerprint:
        return
    path = storage.join(directory, COMMITTED_NAME)
    with storage.atomic_open(path, before_commit=fence.for_file(path)) as handle:
        handle.write(json.dumps({"fingerprint": fingerprint}).encode())


def committed(directory: str, *, fingerprint: str) -> bool:
    """Whether ``directory`` holds the complete pre-pass outputs of ``fingerprint``'s run."""
    if not fingerprint:
        return False
    fs, path = storage.filesystem(storage.join(directory, COMMITTED_NAME))
    try:
        doc = json.loads(fs.cat_file(path))
    except FileNotFoundError:
        return False
    except ValueError:
        log.info("resume: %s is unreadable; running the quality pre-pass again", path)
        return False
    if not isinstance(doc, dict) or doc.get("fingerprint") != fingerprint:
        log.info("resume: the inputs or options changed since the quality pre-pass ran; "
                 "running it again")
        return False
    return True
