"""Prepare ``--output`` for a run: refuse to clobber a complete dataset, and remove only what
earlier pilepack runs provably wrote there.

A directory with ``manifest.json`` holds a complete dataset: replacing it needs
``--overwrite``; the manifest is removed *first* (a half-rebuilt directory is never mistaken for
a complete one), then the files it lists. Otherwise files are removed only where pilepack's run
record says so: ``.pilepack-run.json``, written here before a run writes anything and removed by
``finish`` once its manifest is committed, holds the ``splits`` written here (their
``SPLIT-NNNNN-of-NNNNN.tfrecord`` and each other format's files, as its row of
``pipeline.write.formats.registry`` names them, ``dead_letters/SPLIT-NNNNN.jsonl``,
``doc_hashes/X.bin``), the ``files`` a replaced manifest listed, and the ``foreign`` files,
named like a split's but there before pilepack first wrote that split, which are never removed.
A file named like one this run's split may write that no run wrote (a user's
``train-00000-of-00001.tfrecord``) makes the run refuse before it writes anything (it could be
overwritten), unless ``--overwrite`` gives it up. ``.parts/``, ``.quality/`` and ``.inprogress-``
files (also in a format's folder) are pilepack's alone and removed, one gone meanwhile being no
error; with ``--resume`` (the default) and no complete dataset, what a dead run committed in
``.parts/`` and ``.quality/`` is kept for the run to reuse (``pipeline.write.committed_parts``,
``pipeline.quality.committed_prepass``), only their ``.inprogress-`` files removed. Anything else (a
user's ``data-00000-of-00010.tfrecord`` beside split ``train``, an input corpus, notes) is
never touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re

from common import storage
from common.errors import ConfigError
from pipeline.quality.decision_files import QUALITY_DIR
from pipeline.quality.split_doc_hashes import DIRECTORY as DOC_HASHES_DIR
from pipeline.write.dead_letters import DIRECTORY as DEAD_LETTERS_DIR
from pipeline.write.formats.base import entries
from pipeline.write.formats.registry import FORMATS
from pipeline.write.shard_plan import PARTS_DIR
from schemas.manifest import MANIFEST_NAME

log = logging.getLogger(__name__)

RUN_RECORD = ".pilepack-run.json"  # {"run_id", "splits", "files", "foreign"}

# Pilepack's alone, removed whatever the record says: its scratch directories and temporary
# files (paths relative to --output).
_FOLDERS = "|".join([DEAD_LETTERS_DIR, DOC_HASHES_DIR,
                     *(cls.folder for cls in FORMATS.values() if cls.folder)])
_SCRATCH = re.compile(
    rf"^(?:{re.escape(PARTS_DIR)}/.+|{re.escape(QUALITY_DIR)}/.+"
    rf"|(?:(?:{_FOLDERS})/)?"
    rf"{re.escape(storage.TMP_MARKER)}[^/]*)$")


def names_pattern(splits) -> re.Pattern:
    """The paths (relative to ``--output``) that runs of ``splits`` write."""
    if not splits:
        return re.compile(r"(?!)")  # matches nothing
    recorded = "|".join(re.escape(split) for split in sorted(splits))
    numbered = rf"(?:{recorded})-\d{{5}}-of-\d{{5}}"
    formats = "|".join(cls.file_pattern(numbered) for cls in FORMATS.values())
    return re.compile(
        rf"^(?:{formats}"  # every format's files, by its row of the table
        rf"|{DEAD_LETTERS_DIR}/(?:{recorded})-\d{{5}}\.jsonl"  # write.dead_letters
        rf"|{DOC_HASHES_DIR}/[0-9a-f]\.bin)$")  # quality.split_doc_hashes


def prepare(output: str, *, overwrite: bool, split: str, run_id: str = "",
            resume: bool = False) -> None:
    """Refuse a complete dataset without ``overwrite``; remove what earlier runs provably
    wrote; record that this run (``run_id``, ``split``) writes here. ``resume``: keep what a
    dead run committed under ``.parts/`` and ``.quality/`` for this run to reuse (only their
    temporary files go), unless a complete dataset is replaced."""
    fs, root = storage.filesystem(output)
    root = root.rstrip("/")
    manifest = f"{root}/{MANIFEST_NAME}"
    if not fs.exists(root):
        fs.makedirs(root, exist_ok=True)
    record = _read_json(fs, f"{root}/{RUN_RECORD}")
    splits, files, foreign = (set(_strings(record.get(key))) for key in _RECORD_KEYS)
    if fs.exists(manifest):
        if not overwrite:
            raise ConfigError(
                f"{output} already holds a complete dataset ({MANIFEST_NAME} exists); pass "
                "--overwrite to replace it, or choose another --output"
            )
        files |= _listed(_read_json(fs, manifest))
    present = {path[len(root) + 1:] for path in fs.find(root)}
    if split not in splits:  # files named like this run's that no pilepack run wrote
        foreign |= {name for name in present if names_pattern([split]).match(name)} - files
    if not overwrite:  # --overwrite: the user gives them up
        _refuse_foreign(output, split=split, names=[name for name in sorted(foreign & present)
                                                    if names_pattern([split]).match(name)])
    # The record first: should this run die during the removal, its rerun removes the rest.
    with storage.atomic_open(storage.join(output, RUN_RECORD)) as handle:
        handle.write(json.dumps({"run_id": run_id, "splits": sorted(splits | {split}),
                                 "files": sorted(files), "foreign": sorted(foreign)}).encode())
    keep = resume and not fs.exists(manifest)  # a complete dataset's run left nothing
    if fs.exists(manifest):
        fs.rm(manifest)
    ours = names_pattern(splits)
    stale = [f"{root}/{name}" for name in sorted(present)
             if (_scratch(name, keep_committed=keep) or name in files or ours.match(name))
             and name not in foreign]
    if stale:
        log.info("removing %d leftover file(s) of an earlier run in %s", len(stale), output)
        _remove(fs, stale)


def _scratch(name: str, *, keep_committed: bool) -> bool:
    """Whether ``name`` is pilepack's scratch, to remove (``keep_committed``: but a dead run's
    committed parts and pre-pass outputs, for this run to reuse)."""
    if keep_committed and name.startswith((f"{PARTS_DIR}/", f"{QUALITY_DIR}/")):
        return name.rsplit("/", 1)[-1].startswith(storage.TMP_MARKER)
    return bool(_SCRATCH.match(name))


def _refuse_foreign(output: str, *, split: str, names: list[str]) -> None:
    """This run would write over files no pilepack run wrote (a user's own
    ``train-00000-of-00001.tfrecord``): refuse before anything is written."""
    if not names:
        return
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise ConfigError(
        f"{output} holds {shown}: named like the files split {split!r} writes, but no pilepack "
        "run wrote them there (no run record or manifest names them), so this run could "
        "overwrite them; move or rename them, choose another --output or --split, or pass "
        "--overwrite to let this run replace them")


def _remove(fs, paths: list[str]) -> None:
    """Remove ``paths``; one gone meanwhile is no error (a refused launcher removes its own
    temporary claim file between the listing and the removal)."""
    try:
        fs.rm(paths)
    except FileNotFoundError:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                fs.rm(path)


def finish(output: str) -> None:
    """The manifest is committed and lists this run's files: the run record has done its job."""
    fs, root = storage.filesystem(output)
    try:
        fs.rm(f"{root.rstrip('/')}/{RUN_RECORD}")
    except FileNotFoundError:
        pass


_RECORD_KEYS = ("splits", "files", "foreign")


def _read_json(fs, path: str) -> dict:
    try:
        doc = json.loads(fs.cat_file(path))
    except (FileNotFoundError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def _listed(manifest: dict) -> set[str]:
    """The files a (replaced) manifest lists: every format's (its shards and the others'),
    dead letters and document hashes."""
    listed = [*entries(manifest.get("dead_letters")),
              *entries((manifest.get("doc_hashes") or {}).get("files")),
              *(entry for cls in FORMATS.values() for entry in cls.listed_entries(manifest))]
    return {e["path"] for e in listed if isinstance(e.get("path"), str)
            and "/.." not in "/" + e["path"] and not e["path"].startswith("/")}
