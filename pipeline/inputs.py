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


def _with_scheme(original: str, stripped: str) -> str:
    if "://" in original:
        return original.split("://", 1)[0] + "://" + stripped
    return stripped


def expand_inputs(spec: str) -> list[InputFile]:
    """Expand a comma list of globs/directories/files into InputFiles sorted by path."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        fs, stripped = storage.filesystem(item)
        if any(ch in stripped for ch in "*?["):
            matches = fs.glob(stripped, detail=True)
            if not matches:
                raise InputError(f"--input {item!r} matches no file; check the pattern")
            for path, info in matches.items():
                if info.get("type") != "directory":
                    found[_with_scheme(item, path)] = int(info.get("size") or 0)
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
                found[_with_scheme(item, info["name"])] = int(info.get("size") or 0)
        elif fs.exists(stripped):
            # Spelled like glob and directory matches, so a file named twice is read once.
            found[_with_scheme(item, stripped)] = int(fs.size(stripped) or 0)
        else:
            raise InputError(f"--input {item!r} does not exist (no such file, directory or glob)")
    return [InputFile(index=i, path=p, bytes=found[p]) for i, p in enumerate(sorted(found))]
