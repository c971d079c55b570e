"""Builds the built-in sample: selects documents, splits them into files, writes them.

Selection. ``total_bytes`` bounds the size of the JSON Lines text (before compression). Each
subset but ``Github`` gets a fixed share of it (:data:`SUBSET_SHARES`); ``Github`` gets whatever
the others leave. Within a subset the candidate documents of :data:`datagen.sample.sources.SOURCES`
(in sorted path/key order) are shuffled with ``random.Random(0)`` and taken greedily: a document
that does not fit the remaining budget is skipped, and the scan stops when the budget is nearly
used up.

Split. In each subset every ``val_every``-th selected document (10 % by default) goes to the
held-out ``val.jsonl.zst``; the rest are shuffled together (the Pile's files are shuffled
across subsets too) and dealt round-robin into ``train-00.jsonl.zst``, ``train-01.jsonl.zst``,
... . Each file is one zstd frame (level 3) written by ``datagen.pile_files.write_lines_zst``
in streaming mode, so the frame header carries no content size -- exactly like the real files.
``sample_info.json`` is written last.

Determinism. No clock and no unseeded randomness: the same Python installation and the same
zstandard build give byte-identical files.
"""

from __future__ import annotations

import dataclasses
import os
import random
import sysconfig
from collections.abc import Mapping, Sequence

from common.errors import ConfigError
from common.flags import flag
from datagen.pile_files import write_lines_zst
from datagen.sample.files import (
    VAL_FILENAME,
    SampleFiles,
    pile_line,
    train_filename,
    write_info,
)
from datagen.sample.sources import SOURCES

DEFAULT_TOTAL_BYTES = 4_000_000
DEFAULT_NUM_TRAIN_FILES = 2
DEFAULT_VAL_EVERY = 10
ZSTD_LEVEL = 3
SEED = 0

# Share of total_bytes for each subset; Github (the largest source) takes what is left.
SUBSET_SHARES: Mapping[str, float] = {
    "StackExchange": 0.15,
    "Wikipedia (en)": 0.20,
    "Pile-CC": 0.06,
    "Enron Emails": 0.02,
}
FILL_SUBSET = "Github"
SUBSET_ORDER = (*SUBSET_SHARES, FILL_SUBSET)
# A subset's scan stops once less than this fraction of its budget is left.
_NEARLY_FULL = 0.01
_MAX_TRAIN_FILES = 100  # two-digit file names


@dataclasses.dataclass(frozen=True)
class SampleParams:
    """The parameters that shape a sample (each one changes its bytes)."""

    total_bytes: int = flag(
        DEFAULT_TOTAL_BYTES, help="Upper bound on the uncompressed JSON Lines bytes."
    )
    num_train_files: int = flag(
        DEFAULT_NUM_TRAIN_FILES, help="Number of train-NN.jsonl.zst files."
    )
    val_every: int = flag(
        DEFAULT_VAL_EVERY, help="Hold out every N-th document of each subset in val.jsonl.zst."
    )

    def __post_init__(self):
        for name, minimum in (("total_bytes", 1), ("num_train_files", 1), ("val_every", 2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}.")
        if self.num_train_files > _MAX_TRAIN_FILES:
            raise ConfigError(
                f"num_train_files must be <= {_MAX_TRAIN_FILES} (two-digit names), "
                f"got {self.num_train_files}."
            )


def resolve_stdlib(stdlib_dir: str | None) -> str:
    """The real path of ``stdlib_dir``, or of this interpreter's standard library for ``None``.

    Raises:
        ConfigError: The path is not a directory.
    """
    path = stdlib_dir if stdlib_dir is not None else sysconfig.get_paths()["stdlib"]
    if not os.path.isdir(path):
        raise ConfigError(f"stdlib_dir {path!r} is not a directory.")
    return os.path.realpath(path)


def build_sample(
    *,
    out_dir: str,
    total_bytes: int = DEFAULT_TOTAL_BYTES,
    num_train_files: int = DEFAULT_NUM_TRAIN_FILES,
    val_every: int = DEFAULT_VAL_EVERY,
    stdlib_dir: str | None = None,
) -> SampleFiles:
    """Writes the Pile-format sample into ``out_dir`` (created if missing).

    Args:
        out_dir: Output directory. Files of an earlier sample with the same names are replaced.
        total_bytes: Upper bound on the JSON Lines bytes of all files together.
        num_train_files: Number of ``train-NN.jsonl.zst`` files.
        val_every: Every ``val_every``-th document of each subset is held out in
            ``val.jsonl.zst`` (10 gives ~10 %).
        stdlib_dir: Standard-library directory to read; ``None`` means this interpreter's.

    Returns:
        What was written, with per-file and per-subset counts.

    Raises:
        ConfigError: A bad argument, a budget too small to put a document in every file, or an
            ``out_dir`` holding train files that this build would not overwrite.
    """
    params = SampleParams(
        total_bytes=total_bytes, num_train_files=num_train_files, val_every=val_every
    )
    stdlib_dir = resolve_stdlib(stdlib_dir)
    rng = random.Random(SEED)  # one generator, drawn in a fixed order: selection, then split
    selected = _select_documents(stdlib_dir=stdlib_dir, total_bytes=params.total_bytes, rng=rng)
    assignment = _split(
        selected, num_train_files=params.num_train_files, val_every=params.val_every, rng=rng
    )
    for name, docs in assignment.items():
        if not docs:
            raise ConfigError(
                f"total_bytes={params.total_bytes} is too small: {name} would hold no document; "
                f"raise --total_bytes or lower --num_train_files."
            )
    os.makedirs(out_dir, exist_ok=True)
    _refuse_stale_train_files(out_dir, expected=set(assignment))
    file_bytes = {}
    for name, docs in assignment.items():
        file_bytes[name] = _write_zst(os.path.join(out_dir, name), [line for _, line in docs])
    files = _summarize(out_dir=out_dir, assignment=assignment, file_bytes=file_bytes)
    write_info(files)
    return files


_Selected = tuple[str, bytes]  # (subset, JSON line)


def _select_documents(
    *, stdlib_dir: str, total_bytes: int, rng: random.Random
) -> dict[str, list[_Selected]]:
    """Per subset (in SUBSET_ORDER), the chosen documents in their shuffled order."""
    selected: dict[str, list[_Selected]] = {}
    used = 0
    for subset in SUBSET_ORDER:
        share = SUBSET_SHARES.get(subset)
        budget = int(total_bytes * share) if share is not None else total_bytes - used
        candidates = SOURCES[subset](stdlib_dir)
        rng.shuffle(candidates)
        lines, remaining = [], budget
        for candidate in candidates:
            if remaining < budget * _NEARLY_FULL or remaining <= 0:
                break
            text = candidate.load()
            if text is None:
                continue
            line = pile_line(text=text, subset=subset)
            if len(line) <= remaining:
                lines.append((subset, line))
                remaining -= len(line)
        selected[subset] = lines
        used += budget - remaining
    return selected


def _split(
    selected: Mapping[str, Sequence[_Selected]],
    *,
    num_train_files: int,
    val_every: int,
    rng: random.Random,
) -> dict[str, list[_Selected]]:
    """File name -> documents: stratified held-out split, then a shuffled round-robin deal."""
    train: list[_Selected] = []
    val: list[_Selected] = []
    for docs in selected.values():
        for i, doc in enumerate(docs):
            (val if i % val_every == val_every - 1 else train).append(doc)
    rng.shuffle(train)
    rng.shuffle(val)
    assignment = {train_filename(i): train[i::num_train_files] for i in range(num_train_files)}
    assignment[VAL_FILENAME] = val
    return assignment


def _refuse_stale_train_files(out_dir: str, *, expected: set[str]) -> None:
    stale = sorted(
        name
        for name in os.listdir(out_dir)
        if name.startswith("train-") and name.endswith(".jsonl.zst") and name not in expected
    )
    if stale:
        raise ConfigError(
            f"{out_dir} already holds {', '.join(stale)} from another build; a glob over "
            f"train-*.jsonl.zst would mix samples. Use an empty --out_dir."
        )


def _write_zst(path: str, lines: Sequence[bytes]) -> int:
    """Writes ``lines`` as one zstd frame without a content size; returns the file size."""
    write_lines_zst(path, lines, level=ZSTD_LEVEL)
    return os.path.getsize(path)


def _summarize(
    *, out_dir: str, assignment: Mapping[str, Sequence[_Selected]], file_bytes: Mapping[str, int]
) -> SampleFiles:
    file_subset_counts: dict[str, dict[str, int]] = {}
    subset_counts = {subset: 0 for subset in SUBSET_ORDER}
    subset_json_bytes = {subset: 0 for subset in SUBSET_ORDER}
    for name, docs in assignment.items():
        per_subset = {subset: 0 for subset in SUBSET_ORDER}
        for subset, line in docs:
            per_subset[subset] += 1
            subset_counts[subset] += 1
            subset_json_bytes[subset] += len(line)
        file_subset_counts[name] = per_subset
    return SampleFiles(
        out_dir=out_dir,
        train_files=tuple(name for name in assignment if name != VAL_FILENAME),
        val_file=VAL_FILENAME,
        doc_counts={name: len(docs) for name, docs in assignment.items()},
        file_bytes=dict(file_bytes),
        subset_counts=subset_counts,
        file_subset_counts=file_subset_counts,
        subset_json_bytes=subset_json_bytes,
        json_bytes=sum(subset_json_bytes.values()),
    )
