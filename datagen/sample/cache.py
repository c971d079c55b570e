"""A small, deterministic Pile-format sample built from text the Python installation ships.

The Pile itself cannot be shipped with the project, so tests, benchmarks and the README's quick
start run on a stand-in with the same *format*. Four modules make it, one job each:

- ``datagen.sample.sources``: where the text comes from (stdlib sources, pydoc topics, ...);
- ``datagen.sample.build``: the deterministic generator (select, split, compress, write);
- ``datagen.sample.files``: what a sample directory holds (file names, line format, info file);
- this module: the cache (:func:`ensure_sample`) and ``python -m datagen.sample.cache``.

Determinism. The same Python installation and the same zstandard build give byte-identical
files, so :func:`ensure_sample` caches the sample under :func:`default_sample_dir`, whose name
hashes everything that can change the bytes, and builds it once.

For example, CPython 3.11.7's default (4 MB) sample holds 639 documents -- StackExchange 79,
Wikipedia (en) 351, Pile-CC 14, Enron Emails 48, Github 147 -- in 3,977,676 JSON bytes and
1,044,575 compressed bytes (train 289 + 289, val 61), built in about 1.3 s.

Run ``python -m datagen.sample.cache --out_dir=DIR`` to write a sample and print what it holds.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence

import zstandard

from common.cli import run_main
from common.flags import ArgumentParser, add_flags, flag, from_args
from datagen.sample.build import (
    DEFAULT_NUM_TRAIN_FILES,
    DEFAULT_TOTAL_BYTES,
    DEFAULT_VAL_EVERY,
    SampleParams,
    build_sample,
    resolve_stdlib,
)
from datagen.sample.files import INFO_FILENAME, SAMPLE_FORMAT_VERSION, SampleFiles, load_sample


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
        total_bytes: As for :func:`datagen.sample.build.build_sample`.
        num_train_files: As for :func:`datagen.sample.build.build_sample`.
        val_every: As for :func:`datagen.sample.build.build_sample`.
        stdlib_dir: As for :func:`datagen.sample.build.build_sample`.
        cache_root: Parent directory; ``None`` means ``~/.cache/pilepack``.
    """
    key = json.dumps(
        {
            "version": SAMPLE_FORMAT_VERSION,
            "total_bytes": total_bytes,
            "num_train_files": num_train_files,
            "val_every": val_every,
            "stdlib_dir": resolve_stdlib(stdlib_dir),
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
        total_bytes: As for :func:`datagen.sample.build.build_sample`.
        num_train_files: As for :func:`datagen.sample.build.build_sample`.
        val_every: As for :func:`datagen.sample.build.build_sample`.
        stdlib_dir: As for :func:`datagen.sample.build.build_sample`.

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


@dataclasses.dataclass(frozen=True)
class SampleFlags:
    """The flags of ``python -m datagen.sample.cache``."""

    out_dir: str | None = flag(
        None, help="Output directory; if unset, the sample is built once in the cache dir "
        "(~/.cache/pilepack) and reused."
    )
    params: SampleParams = dataclasses.field(default_factory=SampleParams)


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="python -m datagen.sample.cache",
        description="Write a small Pile-format sample built from the Python stdlib.",
    )
    add_flags(parser, SampleFlags)
    return parser


def _run(args: argparse.Namespace) -> None:
    flags = from_args(SampleFlags, args)  # validates: a bad value is a ConfigError
    params = dataclasses.asdict(flags.params)
    if flags.out_dir is None:
        files = ensure_sample(**params)
    else:
        files = build_sample(out_dir=flags.out_dir, **params)
    print(describe(files))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m datagen.sample.cache [--out_dir=DIR] [--total_bytes=N] ...``."""
    args = _parser().parse_args(argv)
    return run_main(lambda: _run(args))


if __name__ == "__main__":
    sys.exit(main())
