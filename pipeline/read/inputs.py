"""``--input`` (globs, directories, comma lists; local or s3://) -> an ordered file list.

Resolved once, at pipeline construction: the sorted list fixes each file's index, which
names its shards, so reruns are byte-identical.
"""

from __future__ import annotations

import dataclasses

from common import storage
from common.errors import InputError

SUFFIXES = (".jsonl.zst", ".jsonl.zstd", ".jsonl", ".jsonl.gz", ".json.zst", ".json.gz", ".zst")


@dataclasses.dataclass(frozen=True)
class InputFile:
    index: int
    path: str  # an absolute local path, or a URL with its scheme
    bytes: int
    # The file's version when listed: its ETag on object stores, else its mtime ("" = unknown).
    # Reading checks size and version, so a file replaced during a run fails the run.
    version: str = ""


def _with_scheme(original: str, stripped: str) -> str:
    if "://" in original:
        return original.split("://", 1)[0] + "://" + stripped
    return stripped


def expand_inputs(spec: str) -> list[InputFile]:
    """Expand a comma list of globs/directories/files into InputFiles sorted by path."""
    found: dict[str, dict] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        fs, stripped = storage.filesystem(item)
        try:
            found.update(_listed(item, fs, stripped))
        except PermissionError as err:
            if storage.protocol(fs) not in ("s3", "s3a"):  # a local one names its path already
                raise
            raise storage.s3_access_denied(item, err) from err
    return [InputFile(index=i, path=p, bytes=int(found[p].get("size") or 0),
                      version=file_version(found[p]))
            for i, p in enumerate(sorted(found))]


def _listed(item: str, fs, stripped: str) -> dict[str, dict]:
    """The files one ``--input`` item names, by path with its scheme."""
    found: dict[str, dict] = {}
    if any(ch in stripped for ch in "*?["):
        matches = fs.glob(stripped, detail=True)
        if not matches:
            raise InputError(f"--input {item!r} matches no file; check the pattern")
        for path, info in matches.items():
            info = _followed(fs, path, info, item=item)
            if info.get("type") != "directory":
                found[_with_scheme(item, path)] = info
    elif fs.isdir(stripped):
        listed = [
            info for info in fs.find(stripped, detail=True).values()
            if info["name"].endswith(SUFFIXES)
        ]
        if not listed:
            raise InputError(
                f"--input directory {item!r} holds no {', '.join(SUFFIXES[:4])} files"
            )
        for info in listed:
            found[_with_scheme(item, info["name"])] = _followed(fs, info["name"], info, item=item)
    elif fs.exists(stripped):
        # Spelled like glob and directory matches, so a file named twice is read once.
        found[_with_scheme(item, stripped)] = fs.info(stripped)
    else:
        raise InputError(f"--input {item!r} does not exist (no such file, directory or glob)")
    return found


def _followed(fs, path: str, info: dict, *, item: str) -> dict:
    """A listing's entry for a symbolic link describes the link (its mtime, type "other");
    the check before reading (``fs.info``) describes its target. Take the target's, so that a
    linked input is not mistaken for a changed one."""
    if not info.get("islink"):
        return info
    try:
        return fs.info(path)
    except FileNotFoundError:
        raise InputError(f"--input {item!r}: {path} is a symbolic link to a missing file "
                         f"({info.get('destination', '?')}); fix or remove the link") from None


def file_version(info: dict) -> str:
    """What changes when a file is rewritten: the ETag where the store has one, else mtime."""
    for key in ("ETag", "etag", "mtime", "LastModified", "last_modified", "created"):
        if info.get(key):
            return f"{key}={info[key]}"
    return ""


class InputChangedError(InputError):
    """An input file changed or disappeared between listing and reading it."""


def check_unchanged(file: InputFile, fs, stripped: str, *, when: str) -> None:
    """Raise InputChangedError if ``file`` no longer has the size and version it was listed
    with (a run must never mix two versions of an input)."""
    if not file.version:
        return
    try:
        info = fs.info(stripped)
    except FileNotFoundError:
        raise InputChangedError(f"input {file.path} disappeared {when}; the run stops so that "
                                "no dataset mixes versions of its input: rerun") from None
    size, version = int(info.get("size") or 0), file_version(info)
    if (size, version) != (file.bytes, file.version):
        raise InputChangedError(
            f"input {file.path} changed {when} (listed: {file.bytes:,} bytes, {file.version}; "
            f"now: {size:,} bytes, {version}); the run stops so that no dataset mixes versions "
            "of its input: rerun once the input is stable")
