"""The pipeline's measured throughput per core, by encoder backend: the file ``--dry_run`` reads.

``pipeline/launch/dry_run/rates.json`` (``RATES_PATH``) holds, per backend, the text MB (10^6
bytes of document text) the whole pipeline processes per CPU-second, and where that figure
came from (``source``: the command, the corpus, the date). ``python -m bench.scaling_bench
--write_rates=PATH`` writes the entry of the backend its runs used and keeps the others; the
dry run names the entry it used. A version this module does not know is refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

from common import storage
from common.errors import InputError

VERSION = 1
# Package data (pyproject.toml), so an installed launcher has it too.
RATES_PATH = str(pathlib.Path(__file__).resolve().with_name("rates.json"))
UNIT = ("text MB (10^6 bytes of document text) per CPU-second of the whole pipeline: read, "
        "shuffle, parse, tokenize, pack, write parts and shards, manifest, start-up included; "
        "CPU seconds of the run's whole process tree")
_WRITE = "python -m bench.scaling_bench --encoder={backend} --write_rates={path}"


@dataclasses.dataclass(frozen=True)
class Rate:
    """One backend's text MB per CPU-second, and where it was measured."""

    backend: str
    text_mb_per_cpu_second: float
    source: dict  # command, corpus, date (and optionally commit, note)
    path: str  # the rates file it was read from

    def describe(self) -> str:
        """``<command>`` on <corpus>, <date> (<path>)."""
        source = self.source
        return (f"`{source.get('command', '?')}` on {source.get('corpus', '?')}, "
                f"{source.get('date', '?')} ({self.path})")


def _read(path: str) -> dict:
    if not os.path.exists(path):
        return {"version": VERSION, "unit": UNIT, "backends": {}}
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: not a readable rates file ({err}); restore it from the "
                         "repository, or rewrite it with " + _WRITE.format(
                             backend="auto", path=path)) from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise InputError(f"{path}: rates file version {doc.get('version')!r} (this pilepack "
                         f"reads version {VERSION}); use the pilepack that wrote it")
    return doc


def load_rate(backend: str, *, path: str = RATES_PATH) -> Rate:
    """The rate of ``backend`` (``gigatoken``, ``sentencepiece``) in the rates file at ``path``.

    Raises:
      InputError: the file is missing, unreadable, of another version, or has no entry for
        ``backend``; the message says how to write one.
    """
    doc = _read(path)
    entry = doc.get("backends", {}).get(backend)
    if not os.path.exists(path) or not isinstance(entry, dict):
        missing = "is missing" if not os.path.exists(path) else f"has no entry for {backend}"
        raise InputError(f"{path} {missing}: the dry run needs the {backend} encoder's measured "
                         "rate for its core-hours; reinstall pilepack (the file is "
                         "package data), or measure one with "
                         + _WRITE.format(backend=backend, path=path))
    rate = entry.get("text_mb_per_cpu_second")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
        raise InputError(f"{path}: backends.{backend}.text_mb_per_cpu_second must be a "
                         f"positive number, got {rate!r}")
    return Rate(backend=backend, text_mb_per_cpu_second=float(rate),
                source=dict(entry.get("source", {})), path=path)


def write_rate(path: str, *, backend: str, text_mb_per_cpu_second: float,
               source: dict) -> None:
    """Set ``backend``'s entry in the rates file at ``path`` (created if missing), keeping the
    other backends' entries; written atomically."""
    doc = _read(path)
    doc["unit"] = UNIT
    doc.setdefault("backends", {})[backend] = {
        "text_mb_per_cpu_second": round(text_mb_per_cpu_second, 3), "source": source}
    doc["backends"] = dict(sorted(doc["backends"].items()))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with storage.atomic_open(path, "wb") as handle:
        handle.write((json.dumps(doc, indent=2) + "\n").encode())
