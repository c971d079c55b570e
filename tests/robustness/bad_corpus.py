"""Generated equivalents of every kind of damage in a set of real damaged Pile-format files.

Each ``Case`` writes one file and says what the pipeline must do with it: the texts written (in
order), the dead letters ``(line, reason)``, the filtered lines by reason. Expectations for the
truncated files are computed with a second decoder (python-zstandard's ``decompressobj``, which
emits every complete block), so the tests check that nothing decodable is lost either.
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import pathlib
from typing import Callable

import zstandard

from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_gz, write_jsonl_zst
from tests.robustness.helpers import text


@dataclasses.dataclass
class Case:
    name: str  # file name in the corpus directory
    kind: str  # the damage, as listed in docs/robustness.md
    write: Callable[[pathlib.Path], None]
    written: list[str] = dataclasses.field(default_factory=list)
    letters: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    filtered: dict[str, int] = dataclasses.field(default_factory=dict)
    format: str = "zstd"

    @property
    def lines_read(self) -> int:
        return len(self.written) + len(self.letters) + sum(self.filtered.values())


def _good(seed: int, count: int, words: int = 40) -> list[dict]:
    return [pile_doc(text(seed * 100 + i, words)) for i in range(count)]


def _texts(records) -> list[str]:
    return [r["text"] for r in records]


def _truncated(cut_fraction: float, *, name: str, kind: str) -> Case:
    docs = _good(7, 20, words=2500)  # ~15 KB a document: several 128 KiB zstd blocks
    case = Case(name, kind, write=None)

    def write(path: pathlib.Path) -> None:
        write_jsonl_zst(path, docs)
        data = path.read_bytes()
        cut = data[: int(len(data) * cut_fraction)]
        path.write_bytes(cut)
        # What a decoder can get out of the cut frame: every complete block.
        decodable = zstandard.ZstdDecompressor().decompressobj().decompress(cut)
        complete = decodable.count(b"\n")
        case.written = _texts(docs[:complete])
        case.letters = [(complete + 1, "truncated_stream")]

    case.write = write
    return case


def _records_case(name: str, kind: str, records: list, *, written: list[str],
                  letters=(), filtered=None, writer=write_jsonl_zst, fmt="zstd",
                  **options) -> Case:
    def write(path: pathlib.Path) -> None:
        writer(path, records, **options)

    return Case(name, kind, write, written=list(written), letters=list(letters),
                filtered=dict(filtered or {}), format=fmt)


def _raw_case(name: str, kind: str, data: bytes, *, fmt: str, letters=()) -> Case:
    return Case(name, kind, lambda path: path.write_bytes(data), letters=list(letters),
                format=fmt)


def build_cases() -> list[Case]:
    g = _good(1, 12)
    cases = [
        _truncated(0.75, name="truncated.jsonl.zst", kind="truncated mid-frame"),
        _truncated(0.2, name="truncated_early.jsonl.zst",
                   kind="truncated before the first block is complete"),
        _records_case(
            "invalid_json_line.jsonl.zst", "invalid JSON line",
            g[:5] + [b'{"text": "This record is "broken" here", "meta": {"pile_set_name": '
                     b'"P'] + g[5:10],
            written=_texts(g[:10]), letters=[(6, "invalid_json")]),
        _records_case(
            "missing_text.jsonl.zst", 'missing "text"',
            [g[0], {"meta": {"pile_set_name": "Pile-CC"}}, g[1], {"txt": "misspelled"},
             {"Text": "capitalised"}, {"content": "other key"}, {}, g[2]],
            written=_texts(g[:3]), letters=[(n, "text_missing") for n in (2, 4, 5, 6, 7)]),
        _records_case(
            "text_not_string.jsonl.zst", '"text" not a string',
            [g[0], {"text": 12345}, {"text": None}, {"text": True}, {"text": 3.14},
             {"text": ["a list", "of strings"]}, {"text": {"nested": "object"}}, g[1]],
            # A list of strings is joined with blank lines, as lm_dataformat does.
            written=[g[0]["text"], "a list\n\nof strings", g[1]["text"]],
            letters=[(n, "text_not_string") for n in (2, 3, 4, 5, 7)]),
        _records_case(
            "nul_and_surrogates.jsonl.zst", "NUL escapes and lone surrogates",
            [g[0], '{"text": "NUL \\u0000 escapes\\u0000"}', '{"text": "lone high \\ud800 x"}',
             '{"text": "lone low \\udfff x"}', '{"text": "reversed \\udc00\\ud800, cut \\ud83d"}',
             '{"text": "a valid pair \\ud83d\\ude00"}', g[1]],
            written=[g[0]["text"], "NUL \x00 escapes\x00", "a valid pair \U0001F600", g[1]["text"]],
            letters=[(n, "lone_surrogate") for n in (3, 4, 5)]),
        _records_case(
            "raw_nul_byte.jsonl.zst", "raw NUL byte in a string",
            [g[0], b'{"text": "raw NUL byte ->\x00<- inside"}', g[1]],
            written=_texts(g[:2]), letters=[(2, "invalid_json")]),
        _records_case(
            "invalid_utf8.jsonl.zst", "invalid UTF-8",
            [g[0], b'{"text": "bad bytes: \xff\xfe, \xc3\x28, \xed\xa0\x80, \xc0\xaf"}', g[1]],
            written=_texts(g[:2]), letters=[(2, "invalid_utf8")]),
        _records_case(
            "empty_document.jsonl.zst", "empty documents",
            [g[0], pile_doc(""), g[1], pile_doc(" "), pile_doc("\n\n\n"), pile_doc(""), g[2]],
            # Whitespace is text (code and poetry need it); only "" is filtered.
            written=[g[0]["text"], g[1]["text"], " ", "\n\n\n", g[2]["text"]],
            filtered={"empty_text": 2}),
        _records_case(
            "blank_lines.jsonl.zst", "blank lines, no final newline",
            ["", g[0], "", " \t ", g[1], g[2]], final_newline=False,
            written=_texts(g[:3]), filtered={"blank_line": 3}),
        _raw_case("empty_archive.jsonl.zst", "empty archive (a valid empty frame)",
                  zstandard.ZstdCompressor().compress(b""), fmt="zstd"),
        _raw_case("zero_bytes.jsonl.zst", "zero-byte file", b"", fmt="",
                  letters=[(1, "truncated_stream")]),
        _records_case("crlf_line_endings.jsonl.zst", "CRLF line endings", g[:5],
                      line_ending="\r\n", written=_texts(g[:5])),
        _records_case("plain_uncompressed.jsonl", "plain .jsonl", g[:5], writer=write_jsonl,
                      fmt="plain", written=_texts(g[:5])),
        _records_case("not_zstd.jsonl.zst", "plain JSON Lines named .zst", g[5:10],
                      writer=write_jsonl, fmt="plain", written=_texts(g[5:10])),
        _records_case("two_frames.jsonl.zst", "two frames", g[:6], frames=2,
                      written=_texts(g[:6])),
        _records_case("two_frames_split_line.jsonl.zst", "two frames split mid-line", g[:4],
                      frames=2, split_line=True, written=_texts(g[:4])),
        _records_case("skippable_frame.jsonl.zst", "skippable frame first", g[:3],
                      skippable_prefix=True, written=_texts(g[:3])),
        _records_case("long_window.jsonl.zst", "2 GiB window (zstd --long=31)", g[:10],
                      long_window=True, written=_texts(g[:10])),
        _records_case(
            "bad_meta.jsonl.zst", 'odd "meta"',
            [g[0], {"text": "no meta"}, {"text": "string meta", "meta": "Pile-CC"},
             {"text": "no name", "meta": {"source": "x"}},
             {"text": "unknown subset", "meta": {"pile_set_name": "Not A Pile Subset"}},
             {"text": "null meta", "meta": None},
             {"meta": {"pile_set_name": "Github", "extra": 1}, "id": 7, "text": "reordered"}, g[1]],
            written=[g[0]["text"], "no meta", "string meta", "no name", "unknown subset",
                     "null meta", "reordered", g[1]["text"]]),
        _records_case("gzip.jsonl.gz", "gzip", g[:4], writer=write_jsonl_gz, fmt="gzip",
                      written=_texts(g[:4])),
        _gzip_truncated(),
    ]
    return cases


def _gzip_truncated() -> Case:
    docs = _good(9, 10, words=2000)
    case = Case("truncated.jsonl.gz", "truncated gzip", write=None, format="gzip")

    def write(path: pathlib.Path) -> None:
        data = gzip.compress(b"".join(json.dumps(d).encode() + b"\n" for d in docs), mtime=0)
        cut = data[: len(data) * 3 // 4]
        path.write_bytes(cut)
        decodable = zlib_prefix(cut)
        complete = decodable.count(b"\n")
        case.written = _texts(docs[:complete])
        case.letters = [(complete + 1, "truncated_stream")]

    case.write = write
    return case


def zlib_prefix(data: bytes) -> bytes:
    import zlib

    return zlib.decompressobj(wbits=31).decompress(data)


def expected_accounting(cases: list[Case]) -> dict:
    filtered = collections.Counter()
    rejected = collections.Counter()
    for case in cases:
        filtered.update(case.filtered)
        rejected.update(reason for _, reason in case.letters)
    written = sum(len(case.written) for case in cases)
    return {"read": written + sum(filtered.values()) + sum(rejected.values()),
            "written": written, "filtered": dict(sorted(filtered.items())),
            "rejected": dict(sorted(rejected.items()))}
