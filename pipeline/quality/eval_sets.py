"""``--decontaminate``: the evaluation sets, where they are and how their passages are read.

Each source is one evaluation set (its name in the manifest: the source as given):

* JSON Lines files (``.jsonl``, ``.jsonl.zst``, ``.jsonl.gz``; a file, glob or directory, as
  ``--input`` takes): one passage per line, the string (or list of strings, joined with blank
  lines) under ``--decontaminate_field`` (default ``text``); a line that is a bare JSON string
  is the passage itself; blank lines are skipped.
* A split made by this pipeline (its ``manifest.json`` or the directory holding it): the raw
  files its manifest's ``config.input`` names, read the same way with the field ``text`` (every
  document, whatever subsets the split selected). They must still be where that run read them.

Sources are resolved before the run (a missing file fails in seconds); the passages are read
inside the pre-pass pipeline (``pipeline.quality.decontaminate``), where a line that is not
JSON, or lacks the field, stops the run with an error naming the file and line.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Iterator

from common import storage
from common.errors import ConfigError, DataError, InputError
from pipeline.quality.exclusion import manifest_path
from pipeline.read import decode
from pipeline.read.inputs import InputFile, expand_inputs
from schemas import manifest as manifest_schema

MAX_SETS = 64  # each evaluation n-gram records its sets as one uint64 bitmask
_MAX_LINE_BYTES = 1 << 30
_MAX_WINDOW_BYTES = 1 << 31


@dataclasses.dataclass(frozen=True)
class EvalFile:
    path: str
    set_index: int  # which source (evaluation set) it belongs to
    field: str


def _manifest_inputs(manifest_path: str) -> str:
    doc = manifest_schema.load(manifest_path, check_files=False).doc
    spec = doc.get("config", {}).get("input", "")
    if not spec:
        raise ConfigError(f"--decontaminate {manifest_path}: the manifest records no input "
                          "files (made from the built-in sample?); pass the raw files instead")
    return spec


def resolve(sources: tuple[str, ...], *, field: str,
            inputs: list[InputFile]) -> tuple[EvalFile, ...]:
    """Every file of every evaluation set, checked to exist (no data is read).

    Raises:
      ConfigError: too many sets, a set named twice, a file that is also an ``--input`` of
        this run;
      InputError: a source that matches no file.
    """
    if len(sources) > MAX_SETS:
        raise ConfigError(f"--decontaminate names {len(sources)} evaluation sets, at most "
                          f"{MAX_SETS}: merge some into one file")
    repeated = sorted({s for s in sources if sources.count(s) > 1})
    if repeated:  # each would be a set of its own under one name: counted twice in the report
        raise ConfigError(f"--decontaminate names {', '.join(repeated)} more than once: "
                          "give each evaluation set once")
    own = {f.path for f in inputs}
    files = []
    for index, source in enumerate(sources):
        manifest = manifest_path(source)
        spec, source_field = ((_manifest_inputs(manifest), "text") if manifest
                              else (source, field))
        try:
            found = expand_inputs(spec)
        except InputError as err:
            raise InputError(f"--decontaminate {source}: {err}") from None
        for file in found:
            if file.path in own:
                raise ConfigError(f"--decontaminate {source}: {file.path} is also an --input "
                                  "of this run (every document would match)")
            files.append(EvalFile(path=file.path, set_index=index, field=source_field))
    return tuple(files)


def _passage(value, *, field: str) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, dict) or field not in value:
        return None
    text = value[field]
    if isinstance(text, list) and all(isinstance(part, str) for part in text):
        return "\n\n".join(text)
    return text if isinstance(text, str) else None


def read_passages(file: EvalFile) -> Iterator[str]:
    """The passages of one evaluation file, in order.

    Raises:
      DataError: a line that is not JSON or has no string field, naming the file and line.
    """
    fs, stripped = storage.filesystem(file.path)
    with fs.open(stripped, "rb") as raw:
        try:
            _, blocks = decode.open_blocks(raw, path=file.path,
                                           max_window_bytes=_MAX_WINDOW_BYTES)
            for line in decode.iter_lines(blocks, max_line_bytes=_MAX_LINE_BYTES):
                if not line.data or not line.data.strip():
                    continue
                try:
                    value = json.loads(line.data)
                except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                    raise DataError(f"--decontaminate: {file.path} line {line.number} is not "
                                    "a JSON line; fix or remove the file") from None
                text = _passage(value, field=file.field)
                if text is None:
                    raise DataError(
                        f"--decontaminate: {file.path} line {line.number} has no string "
                        f"{file.field!r} field; pass --decontaminate_field=NAME with the "
                        "field holding the text")
                yield text
        except decode.StreamError as err:
            raise DataError(f"--decontaminate: {file.path}: {err}; fix or remove the "
                            "file") from None
