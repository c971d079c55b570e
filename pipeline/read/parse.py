"""One line of Pile JSON Lines -> a Document, or the reason it is filtered or rejected.

Accepted shapes (The Pile and lm_dataformat's variants):

* ``{"text": "...", "meta": {"pile_set_name": "Github"}}`` (The Pile);
* ``"text"`` as a list of strings: joined with blank lines (``"\\n\\n"``), as lm_dataformat does;
* a bare JSON string line: the text itself;
* ``meta`` missing, not an object, or without a string ``pile_set_name``: subset ``UNKNOWN_SUBSET``.

Rejections (dead letters) and filters have stable reason names, listed in ``REJECT_REASONS``
and ``FILTER_REASONS``; the manifest's accounting counts each.
"""

from __future__ import annotations

import dataclasses
import json

import orjson

UNKNOWN_SUBSET = "(unknown)"
EXCERPT_CHARS = 160

REJECT_REASONS = {
    "invalid_utf8": "the line is not valid UTF-8",
    "invalid_json": "the line is not valid JSON",
    "not_a_record": "the line is JSON but neither an object nor a string",
    "text_missing": 'the object has no "text" key',
    "text_not_string": '"text" is neither a string nor a list of strings',
    "lone_surrogate": '"text" holds an unpaired UTF-16 surrogate (cannot be UTF-8 encoded)',
    "line_too_long": "the line is longer than --max_line_bytes",
    "truncated_stream": "the compressed stream ends early; the rest of the file is lost",
    "corrupt_stream": "the compressed data is corrupt from here on",
    "window_too_large": "the zstd window exceeds --max_window_bytes",
    "unreadable_file": "the file could not be opened or read",
}
FILTER_REASONS = {
    "blank_line": "an empty or whitespace-only line (no record)",
    "empty_text": '"text" is the empty string',
    "subset_excluded": "its pile_set_name is not selected by --include_subsets/--exclude_subsets",
    # Decided by the data-quality options (pipeline.quality.selection, docs/data-quality.md):
    "duplicate": "--dedup=exact: an equal document (after normalization) comes earlier",
    "near_duplicate": "--dedup=near: a similar document (MinHash-LSH) comes earlier",
    "contaminated": "--exclude_docs_from: its hash is in another split or excluded file",
    "decontaminated": "--decontaminate: it shares a word n-gram with an evaluation set (or is "
                      "blank once they are cut)",
    "mixture": "--subset_weights/--subset_tokens gave it 0 copies",
}


@dataclasses.dataclass(frozen=True)
class Document:
    text: str
    subset: str
    line: int
    text_bytes: int  # UTF-8 size of text


@dataclasses.dataclass(frozen=True)
class Rejected:
    reason: str
    detail: str


@dataclasses.dataclass(frozen=True)
class Filtered:
    reason: str


def excerpt(data: bytes) -> str:
    """A short, printable prefix of a bad line for dead letters (never the whole line)."""
    return data[: EXCERPT_CHARS * 4].decode("utf-8", "backslashreplace")[:EXCERPT_CHARS]


def parse_line(data: bytes, *, line: int) -> Document | Rejected | Filtered:
    """Parse one line (without its line ending).

    orjson parses most lines (~1.6x less CPU than ``json``; it checks the UTF-8 as it
    parses); a line it refuses, or whose record would be rejected, is parsed again by
    ``parse_line_exact``, so that every rejection and its detail are ``json``'s own. The two
    agree on every line orjson accepts as a document (``tests/pipeline/read/test_parse.py``);
    they differ only where ``json`` is more lenient (NaN, lone surrogates, integers over 64
    bits, which orjson reads as floats) or deeper.
    """
    if not data.strip():
        return Filtered("blank_line")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_line_exact(data, line=line)
    result = _record(value, line=line)
    return parse_line_exact(data, line=line) if isinstance(result, Rejected) else result


def parse_line_exact(data: bytes, *, line: int) -> Document | Rejected | Filtered:
    """``parse_line`` with the standard library's ``json`` alone: the reference, whose
    rejections (and their details) ``parse_line`` returns."""
    if not data.strip():
        return Filtered("blank_line")
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return Rejected("invalid_utf8", f"byte {err.start}: {err.reason}")
    try:
        value = json.loads(decoded)
    except json.JSONDecodeError as err:
        return Rejected("invalid_json", f"column {err.colno}: {err.msg}")
    except RecursionError:
        return Rejected("invalid_json", "nested too deeply")
    return _record(value, line=line)


def _record(value, *, line: int) -> Document | Rejected | Filtered:
    """A parsed JSON value -> its Document, or why it is filtered or rejected."""
    subset = UNKNOWN_SUBSET
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        if "text" not in value:
            keys = ", ".join(sorted(map(str, value))[:5]) or "none"
            return Rejected("text_missing", f"keys present: {keys}")
        text = value["text"]
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "\n\n".join(text)
        elif not isinstance(text, str):
            return Rejected("text_not_string", f'"text" is {type(text).__name__}')
        meta = value.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("pile_set_name"), str):
            subset = meta["pile_set_name"]
    else:
        return Rejected("not_a_record", f"top-level JSON {type(value).__name__}")
    if not text:
        return Filtered("empty_text")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as err:
        return Rejected("lone_surrogate", f"character {err.start}: {text[err.start]!r}")
    return Document(text=text, subset=subset, line=line, text_bytes=size)
