"""Tests for datagen/pile_files.py: the writers of synthetic Pile-format files."""

from __future__ import annotations

import gzip
import io
import json

import pytest
import zstandard

from datagen import pile_files
from datagen.pile_files import read_zst, zst_frames

_DOCS = [pile_files.pile_doc(f"document {i} ünïcode", subset="Github") for i in range(10)]
_DOC_BYTES = b"".join(json.dumps(d).encode() + b"\n" for d in _DOCS)


def test_pile_doc():
    assert pile_files.pile_doc("x") == {"text": "x", "meta": {"pile_set_name": "Pile-CC"}}


def test_raw_lines_are_written_verbatim(tmp_path):
    path = pile_files.write_jsonl(
        tmp_path / "a.jsonl",
        [{"text": "é"}, '{"broken', b"\xff\xfe"],
        line_ending="\r\n",
        final_newline=False,
    )
    with open(path, "rb") as f:
        assert f.read() == b'{"text": "\\u00e9"}\r\n{"broken\r\n\xff\xfe'


def test_gzip_round_trip_is_reproducible(tmp_path):
    a = pile_files.write_jsonl_gz(tmp_path / "a.jsonl.gz", _DOCS)
    b = pile_files.write_jsonl_gz(tmp_path / "b.jsonl.gz", _DOCS)
    with open(a, "rb") as fa, open(b, "rb") as fb:
        data = fa.read()
        assert data == fb.read()
    assert gzip.decompress(data) == _DOC_BYTES


@pytest.mark.parametrize("split_line", [False, True])
def test_multi_frame_round_trip(tmp_path, split_line):
    path = pile_files.write_jsonl_zst(
        tmp_path / "a.jsonl.zst", _DOCS, frames=3, split_line=split_line
    )
    with open(path, "rb") as f:
        data = f.read()
    frames = zst_frames(data)
    assert len(frames) == 3 and b"".join(frames) == _DOC_BYTES
    assert [frame.endswith(b"\n") for frame in frames] == [not split_line, not split_line, True]
    assert read_zst(path) == _DOC_BYTES
    # Without read_across_frames a single read() stops at the end of the first frame.
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    assert reader.read(len(_DOC_BYTES) + 1) == frames[0]


def test_more_frames_than_lines_gives_valid_empty_frames(tmp_path):
    path = pile_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS[:2], frames=4)
    with open(path, "rb") as f:
        assert [len(frame) > 0 for frame in zst_frames(f.read())] == [False, True, False, True]
    assert read_zst(path) == b"".join(json.dumps(d).encode() + b"\n" for d in _DOCS[:2])


def test_split_line_needs_a_line_per_frame(tmp_path):
    with pytest.raises(ValueError, match="at least frames=4 lines"):
        pile_files.write_jsonl_zst(tmp_path / "a.zst", _DOCS[:3], frames=4, split_line=True)
    with pytest.raises(ValueError, match="cannot cut"):
        pile_files.write_jsonl_zst(tmp_path / "a.zst", ["a", ""], frames=2, split_line=True)


def test_skippable_prefix_is_skipped(tmp_path):
    path = pile_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS, skippable_prefix=True)
    with open(path, "rb") as f:
        head = f.read(8)
    assert head[:4] == (0x184D2A50).to_bytes(4, "little")
    assert int.from_bytes(head[4:], "little") == len(pile_files.SKIPPABLE_PAYLOAD)
    assert read_zst(path) == _DOC_BYTES


def test_long_window_needs_max_window_size(tmp_path):
    path = pile_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS, long_window=True)
    with open(path, "rb") as f:
        assert zstandard.get_frame_parameters(f.read(18)).window_size == 2**31
    with pytest.raises(zstandard.ZstdError, match="too much memory"):
        read_zst(path)
    assert read_zst(path, max_window_size=2**31) == _DOC_BYTES


def test_read_records_parses_every_line(tmp_path):
    path = pile_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS, frames=2)
    assert pile_files.read_records(path) == _DOCS
