"""A small, deterministic Pile-format sample built from text the Python installation ships.

The Pile itself cannot be shipped or downloaded here, so tests, benchmarks and the README's
quick start run on a stand-in with the same *format*: zstd-compressed JSON Lines, one document
per line, serialized the way the Pile's writer (lm_dataformat) does it::

    {"text": "...", "meta": {"pile_set_name": "Github"}}

that is ``json.dumps(record)`` with its defaults (``", "``/``": "`` separators,
``ensure_ascii=True``) plus ``"\\n"``, compressed with ``zstandard.ZstdCompressor(level=3)`` in
streaming mode, so the frame header carries no content size -- exactly like the real files.

Where the text comes from (all under ``sysconfig.get_paths()["stdlib"]``; ``site-packages``,
``__pycache__`` and the test-suite directories ``test``/``tests``/``idle_test`` are skipped, and
so is any file that is not valid UTF-8 or holds only whitespace):

===================  ========================================================================
subset               documents
===================  ========================================================================
``Github``           standard-library ``.py`` files, one file per document, verbatim.
``StackExchange``    the entries of ``pydoc_data/topics.py`` (the text behind ``help("if")``),
                     one topic per document; read with ``ast.literal_eval``, not imported.
``Wikipedia (en)``   one "article" per module: the module name as a title line, its docstring,
                     then the docstrings of its public top-level classes and functions, each
                     under its name (``ast.get_docstring``; nothing is imported). At least 200
                     characters of prose, or the module is skipped.
``Pile-CC``          the prose files shipped with the stdlib: ``*.txt``, ``*.rst``, ``README*``
                     (``LICENSE.txt``, IDLE's ``NEWS.txt``, ``email/architecture.rst``, ...).
``Enron Emails``     the RFC 5322 messages in ``test/test_email/data/msg_*.txt`` (absent from
                     installations that strip the test suite; the subset is then empty).
===================  ========================================================================

Selection. ``total_bytes`` bounds the size of the JSON Lines text (before compression). Each
subset but ``Github`` gets a fixed share of it (:data:`SUBSET_SHARES`); ``Github`` gets whatever
the others leave. Within a subset the candidate documents (in sorted path/key order) are
shuffled with ``random.Random(0)`` and taken greedily: a document that does not fit the
remaining budget is skipped, and the scan stops when the budget is nearly used up.

Split. In each subset every ``val_every``-th selected document (10 % by default) goes to the
held-out ``val.jsonl.zst``; the rest are shuffled together (the Pile's files are shuffled
across subsets too) and dealt round-robin into ``train-00.jsonl.zst``, ``train-01.jsonl.zst``,
... . ``sample_info.json`` is written last and lists every file with its counts; a directory
without it is not a finished sample.

Determinism. No clock and no unseeded randomness: the same Python installation and the same
zstandard build give byte-identical files. :func:`ensure_sample` caches the sample under
:func:`default_sample_dir`, whose name hashes everything that can change the bytes.

For example, CPython 3.11.7's default (4 MB) sample holds 639 documents -- StackExchange 79,
Wikipedia (en) 351, Pile-CC 14, Enron Emails 48, Github 147 -- in 3,977,676 JSON bytes and
1,044,575 compressed bytes (train 289 + 289, val 61), built in about 1.3 s.

Run ``python -m pipeline.sample_data --out_dir=DIR`` to write a sample and print what it holds.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence

import zstandard

from pipeline.sample_sources import SOURCES

# Bump whenever a change to this module changes the files' bytes.
SAMPLE_FORMAT_VERSION = 1
INFO_FILENAME = "sample_info.json"
VAL_FILENAME = "val.jsonl.zst"
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


@dataclasses.dataclass(frozen=True)
class SampleFiles:
    """What :func:`build_sample` wrote. File names are relative to ``out_dir``.

    Attributes:
        out_dir: Directory holding the files.
        train_files: Names of the training files, e.g. ``("train-00.jsonl.zst", ...)``.
        val_file: Name of the held-out file, ``"val.jsonl.zst"``.
        doc_counts: Documents per file name.
        file_bytes: Compressed size per file name.
        subset_counts: Documents per subset (``pile_set_name``), all files together.
        file_subset_counts: Documents per file name, then per subset.
        subset_json_bytes: JSON Lines bytes (uncompressed, newlines included) per subset.
        json_bytes: JSON Lines bytes of all files together; at most the ``total_bytes`` asked.
    """

    out_dir: str
    train_files: tuple[str, ...]
    val_file: str
    doc_counts: Mapping[str, int]
    file_bytes: Mapping[str, int]
    subset_counts: Mapping[str, int]
    file_subset_counts: Mapping[str, Mapping[str, int]]
    subset_json_bytes: Mapping[str, int]
    json_bytes: int

    @property
    def train_paths(self) -> list[str]:
        """Paths of the training files (``out_dir`` joined with their names), a fresh list."""
        return [os.path.join(self.out_dir, name) for name in self.train_files]

    @property
    def val_path(self) -> str:
        """Path of the held-out file."""
        return os.path.join(self.out_dir, self.val_file)

    @property
    def compressed_bytes(self) -> int:
        """Total size of the compressed files."""
        return sum(self.file_bytes.values())

    @property
    def num_docs(self) -> int:
        """Documents in all files together."""
        return sum(self.doc_counts.values())

    def to_info(self) -> dict:
        """The ``sample_info.json`` content (file names only, so the directory can move)."""
        info = {"version": SAMPLE_FORMAT_VERSION}
        info.update(dataclasses.asdict(self))
        del info["out_dir"]
        info["train_files"] = list(self.train_files)
        return info

    @classmethod
    def from_info(cls, info: Mapping, *, out_dir: str, info_path: str) -> SampleFiles:
        """Rebuilds a :class:`SampleFiles` from :meth:`to_info`'s output.

        Raises:
            ValueError: ``info`` has a version this module does not know (named with the file).
        """
        if info.get("version") != SAMPLE_FORMAT_VERSION:
            raise ValueError(
                f"{info_path}: sample version {info.get('version')!r} is not "
                f"{SAMPLE_FORMAT_VERSION}; delete {out_dir} and rebuild it."
            )
        fields = {k: v for k, v in info.items() if k != "version"}
        fields["train_files"] = tuple(fields["train_files"])
        return cls(out_dir=out_dir, **fields)


def pile_line(*, text: str, subset: str) -> bytes:
    """One Pile JSON Lines record, byte for byte as lm_dataformat writes it.

    >>> pile_line(text="héllo", subset="Github")
    b'{"text": "h\\\\u00e9llo", "meta": {"pile_set_name": "Github"}}\\n'
    """
    return (json.dumps({"text": text, "meta": {"pile_set_name": subset}}) + "\n").encode("utf-8")


def train_filename(index: int) -> str:
    """``train-00.jsonl.zst`` for ``index`` 0."""
    return f"train-{index:02d}.jsonl.zst"


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
        ValueError: A bad argument, a budget too small to put a document in every file, or an
            ``out_dir`` holding train files that this build would not overwrite.
    """
    _check_params(total_bytes=total_bytes, num_train_files=num_train_files, val_every=val_every)
    stdlib_dir = _resolve_stdlib(stdlib_dir)
    rng = random.Random(SEED)
    selected = _select_documents(stdlib_dir=stdlib_dir, total_bytes=total_bytes, rng=rng)
    assignment = _split(selected, num_train_files=num_train_files, val_every=val_every, rng=rng)
    for name, docs in assignment.items():
        if not docs:
            raise ValueError(
                f"total_bytes={total_bytes} is too small: {name} would hold no document; "
                f"raise --total_bytes or lower --num_train_files."
            )
    os.makedirs(out_dir, exist_ok=True)
    _refuse_stale_train_files(out_dir, expected=set(assignment))
    file_bytes = {}
    for name, docs in assignment.items():
        file_bytes[name] = _write_zst(os.path.join(out_dir, name), [line for _, line in docs])
    files = _summarize(out_dir=out_dir, assignment=assignment, file_bytes=file_bytes)
    _write_json_atomic(os.path.join(out_dir, INFO_FILENAME), files.to_info())
    return files


def load_sample(out_dir: str) -> SampleFiles:
    """Reads a finished sample's ``sample_info.json``.

    Raises:
        FileNotFoundError: ``out_dir`` holds no ``sample_info.json`` (not a finished sample).
        ValueError: The info file has an unknown version.
    """
    info_path = os.path.join(out_dir, INFO_FILENAME)
    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    return SampleFiles.from_info(info, out_dir=out_dir, info_path=info_path)


def default_sample_dir(
    *,
    total_bytes: int = DEFAULT_TOTAL_BYTES,
    num_train_files: int = DEFAULT_NUM_TRAIN_FILES,
    val_every: int = DEFAULT_VAL_EVERY,
    stdlib_dir: str | None = None,
    cache_root: str | None = None,
) -> str:
    """The cache directory for a sample built with these parameters.

    ``<cache_root>/sample-py3.11.7-<hash>``, where the hash covers the build parameters, the
    sample format version, the stdlib path, the full ``sys.version`` and the zstd version.

    Args:
        total_bytes: As for :func:`build_sample`.
        num_train_files: As for :func:`build_sample`.
        val_every: As for :func:`build_sample`.
        stdlib_dir: As for :func:`build_sample`.
        cache_root: Parent directory; ``None`` means ``~/.cache/pilepack``.
    """
    key = json.dumps(
        {
            "version": SAMPLE_FORMAT_VERSION,
            "total_bytes": total_bytes,
            "num_train_files": num_train_files,
            "val_every": val_every,
            "stdlib_dir": _resolve_stdlib(stdlib_dir),
            "python": sys.version,
            "zstd": list(zstandard.ZSTD_VERSION),
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    root = cache_root if cache_root is not None else os.path.expanduser("~/.cache/pilepack")
    python = ".".join(str(part) for part in sys.version_info[:3])
    return os.path.join(root, f"sample-py{python}-{digest}")


def ensure_sample(
    *,
    sample_dir: str | None = None,
    total_bytes: int = DEFAULT_TOTAL_BYTES,
    num_train_files: int = DEFAULT_NUM_TRAIN_FILES,
    val_every: int = DEFAULT_VAL_EVERY,
    stdlib_dir: str | None = None,
) -> SampleFiles:
    """Returns the sample in ``sample_dir``, building it there first if it is not finished.

    The build goes to a temporary sibling directory that is renamed into place, so readers
    never see half a sample and concurrent callers end up sharing one.

    Args:
        sample_dir: Where the sample lives; ``None`` means :func:`default_sample_dir` for
            these parameters. A given directory is trusted to match the parameters.
        total_bytes: As for :func:`build_sample`.
        num_train_files: As for :func:`build_sample`.
        val_every: As for :func:`build_sample`.
        stdlib_dir: As for :func:`build_sample`.

    Raises:
        FileExistsError: ``sample_dir`` exists, is not empty and holds no finished sample.
    """
    params = dict(total_bytes=total_bytes, num_train_files=num_train_files, val_every=val_every)
    if sample_dir is None:
        sample_dir = default_sample_dir(stdlib_dir=stdlib_dir, **params)
    if os.path.exists(os.path.join(sample_dir, INFO_FILENAME)):
        return load_sample(sample_dir)
    parent = os.path.dirname(os.path.abspath(sample_dir))
    os.makedirs(parent, exist_ok=True)
    tmp_dir = tempfile.mkdtemp(prefix=f".{os.path.basename(sample_dir)}.tmp-", dir=parent)
    try:
        build_sample(out_dir=tmp_dir, stdlib_dir=stdlib_dir, **params)
        try:
            os.rename(tmp_dir, sample_dir)
        except OSError:
            # Renaming onto a non-empty directory fails: someone else finished first (use
            # theirs) or the directory holds something that is not a finished sample.
            if not os.path.exists(os.path.join(sample_dir, INFO_FILENAME)):
                raise FileExistsError(
                    f"{sample_dir} exists but holds no {INFO_FILENAME}; delete it and retry."
                ) from None
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return load_sample(sample_dir)


def _check_params(*, total_bytes: int, num_train_files: int, val_every: int) -> None:
    for name, value, minimum in (
        ("total_bytes", total_bytes, 1),
        ("num_train_files", num_train_files, 1),
        ("val_every", val_every, 2),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    if num_train_files > 100:
        raise ValueError(
            f"num_train_files must be <= 100 (two-digit names), got {num_train_files}."
        )


def _resolve_stdlib(stdlib_dir: str | None) -> str:
    path = stdlib_dir if stdlib_dir is not None else sysconfig.get_paths()["stdlib"]
    if not os.path.isdir(path):
        raise ValueError(f"stdlib_dir {path!r} is not a directory.")
    return os.path.realpath(path)


# --- Selection, split, writing -----------------------------------------------------------------

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
        raise ValueError(
            f"{out_dir} already holds {', '.join(stale)} from another build; a glob over "
            f"train-*.jsonl.zst would mix samples. Use an empty --out_dir."
        )


def _write_zst(path: str, lines: Sequence[bytes]) -> int:
    """Streams ``lines`` into one zstd frame without a content size; returns the file size."""
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    with open(path, "wb") as f:
        with compressor.stream_writer(f, closefd=False) as writer:
            for line in lines:
                writer.write(line)
        return f.tell()


def _write_json_atomic(path: str, obj: Mapping) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


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


@dataclasses.dataclass(frozen=True)
class _Flags:
    out_dir: str | None
    total_bytes: int
    num_train_files: int
    val_every: int


def _parse_flags(argv: Sequence[str] | None) -> _Flags:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.sample_data",
        description="Write a small Pile-format sample built from the Python stdlib.",
    )
    parser.add_argument(
        "--out_dir", help="Output directory (default: the cache dir, built once and reused)."
    )
    parser.add_argument(
        "--total_bytes",
        type=int,
        default=DEFAULT_TOTAL_BYTES,
        help="Upper bound on the uncompressed JSON Lines bytes.",
    )
    parser.add_argument("--num_train_files", type=int, default=DEFAULT_NUM_TRAIN_FILES)
    parser.add_argument(
        "--val_every",
        type=int,
        default=DEFAULT_VAL_EVERY,
        help="Hold out every N-th document of each subset.",
    )
    args = parser.parse_args(argv)
    return _Flags(
        out_dir=args.out_dir,
        total_bytes=args.total_bytes,
        num_train_files=args.num_train_files,
        val_every=args.val_every,
    )


def describe(files: SampleFiles) -> str:
    """A human-readable summary of a sample, one file or subset per line."""
    lines = [f"sample in {files.out_dir}"]
    for name in (*files.train_files, files.val_file):
        lines.append(f"  {name}: {files.doc_counts[name]:,} docs, {files.file_bytes[name]:,} bytes")
    for subset, count in files.subset_counts.items():
        lines.append(f"  {subset}: {count:,} docs, {files.subset_json_bytes[subset]:,} JSON bytes")
    lines.append(
        f"  total: {files.num_docs:,} docs, {files.json_bytes:,} JSON bytes, "
        f"{files.compressed_bytes:,} compressed bytes"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pipeline.sample_data [--out_dir=DIR] [--total_bytes=N] ...``."""
    flags = _parse_flags(argv)
    params = dict(
        total_bytes=flags.total_bytes,
        num_train_files=flags.num_train_files,
        val_every=flags.val_every,
    )
    try:
        if flags.out_dir is None:
            files = ensure_sample(**params)
        else:
            files = build_sample(out_dir=flags.out_dir, **params)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(describe(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
