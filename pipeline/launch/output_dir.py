"""Prepare ``--output`` for a run: refuse to clobber a complete dataset, clear leftovers.

A directory with ``manifest.json`` holds a complete dataset: replacing it needs
``--overwrite``, and the manifest is removed *first*, so a half-rebuilt directory is never
mistaken for a complete one. Without a manifest, shards, dead letters and ``.inprogress-``
files are leftovers of an interrupted run (never listed anywhere) and are deleted; shard names
are deterministic, so the rerun rewrites them identically.
"""

from __future__ import annotations

import logging
import re

from common import storage
from common.errors import ConfigError
from schemas.manifest import MANIFEST_NAME

log = logging.getLogger(__name__)
# Only names this pipeline writes are leftovers: the user's own files under --output (an input
# corpus, notes) are never touched. Paths are relative to --output.
LEFTOVER = re.compile(
    r"^(?:[A-Za-z0-9_.-]+-\d{5}-of-\d{5}\.tfrecord"  # shards (pipeline.write.shard_plan.shard_name)
    r"|[A-Za-z0-9_.-]+-\d{5}-\d{5}\.tfrecord"  # shards of earlier pilepack versions
    r"|\.parts/[^/]+"  # parts (pipeline.write.shard_plan.part_path)
    r"|\.quality/[^/]+"  # the quality pre-pass's decisions (pipeline.quality.decisions)
    r"|doc_hashes/[0-9a-f]\.bin"  # pipeline.quality.doc_hash_files.hash_file_path
    r"|dead_letters/[A-Za-z0-9_.-]+-\d{5}\.jsonl"  # pipeline.write.dead_letters.dead_letter_path
    r"|(?:dead_letters/|doc_hashes/)?" + re.escape(storage.TMP_MARKER) + r"[^/]*)$"
)


def prepare(output: str, *, overwrite: bool) -> None:
    fs, root = storage.filesystem(output)
    root = root.rstrip("/")
    manifest = f"{root}/{MANIFEST_NAME}"
    if fs.exists(manifest):
        if not overwrite:
            raise ConfigError(
                f"{output} already holds a complete dataset ({MANIFEST_NAME} exists); pass "
                "--overwrite to replace it, or choose another --output"
            )
        fs.rm(manifest)
    if not fs.exists(root):
        fs.makedirs(root, exist_ok=True)
        return
    stale = [path for path in fs.find(root) if LEFTOVER.match(path[len(root) + 1:])]
    if stale:
        log.info("removing %d leftover file(s) of an interrupted run in %s", len(stale), output)
        fs.rm(stale)
