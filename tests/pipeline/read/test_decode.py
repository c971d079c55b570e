"""decode.py: format detection, multi-frame zstd, truncation, limits, line splitting."""

import gzip
import io

import pytest
import zstandard

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.read import decode


def _lines(data: bytes, *, max_line_bytes=1 << 20, max_window_bytes=1 << 31):
    fmt, blocks = decode.open_blocks(io.BytesIO(data), path="x", max_window_bytes=max_window_bytes)
    return fmt, list(decode.iter_lines(blocks, max_line_bytes=max_line_bytes))


def _docs(n):
    return [pile_doc(f"document {i} " + "word " * (i * 50)) for i in range(n)]


def test_detect_format_by_content_not_name():
    assert decode.detect_format(b"\x28\xb5\x2f\xfd", "a.jsonl") == "zstd"
    assert decode.detect_format(b"\x50\x2a\x4d\x18", "a.jsonl") == "zstd"  # skippable frame
    assert decode.detect_format(b"\x1f\x8b\x08\x00", "a.zst") == "gzip"
    assert decode.detect_format(b'{"te', "a.jsonl.zst") == "plain"


@pytest.mark.parametrize("layout", [dict(frames=1), dict(frames=3), dict(frames=3, split_line=True),
                                    dict(skippable_prefix=True), dict(long_window=True)])
def test_zstd_layouts_read_every_line(tmp_path, layout):
    path = write_jsonl_zst(tmp_path / "a.jsonl.zst", _docs(7), **layout)
    fmt, lines = _lines(open(path, "rb").read())
    assert fmt == "zstd"
    assert [line.number for line in lines] == list(range(1, 8))
    assert lines[3].data.startswith(b'{"text": "document 3 ')


def test_truncated_before_first_block_is_an_error_not_zero_lines(tmp_path):
    path = write_jsonl_zst(tmp_path / "a.jsonl.zst", _docs(40))
    data = open(path, "rb").read()
    with pytest.raises(decode.StreamError) as err:
        _lines(data[:40])
    assert err.value.reason == "truncated_stream"


def test_truncated_mid_frame_reports_offset(tmp_path):
    path = write_jsonl_zst(tmp_path / "a.jsonl.zst", _docs(60))
    data = open(path, "rb").read()
    with pytest.raises(decode.StreamError) as err:
        _lines(data[: len(data) - 10])
    assert err.value.reason == "truncated_stream"
    assert err.value.offset == len(data) - 10


def test_window_limit_is_a_clear_error(tmp_path):
    path = write_jsonl_zst(tmp_path / "a.jsonl.zst", _docs(3), long_window=True)
    with pytest.raises(decode.StreamError) as err:
        _lines(open(path, "rb").read(), max_window_bytes=1 << 27)
    assert err.value.reason == "window_too_large"
    assert "--max_window_bytes" in err.value.detail


def test_corrupt_zstd_is_reported():
    good = zstandard.ZstdCompressor().compress(b'{"text": "a"}\n' * 1000)
    bad = good[:8] + bytes(b ^ 0xFF for b in good[8:30]) + good[30:]
    with pytest.raises(decode.StreamError) as err:
        _lines(bad)
    assert err.value.reason in ("corrupt_stream", "truncated_stream")


def test_empty_inputs_have_no_lines():
    assert _lines(b"") == ("plain", [])
    assert _lines(zstandard.ZstdCompressor().compress(b"")) == ("zstd", [])


def test_gzip_and_truncated_gzip():
    data = gzip.compress(b"a\nb\n" * 1000)
    fmt, lines = _lines(data)
    assert fmt == "gzip" and len(lines) == 2000
    with pytest.raises(decode.StreamError) as err:
        _lines(data[:-12])
    assert err.value.reason == "truncated_stream"


def test_iter_lines_crlf_blank_and_no_final_newline():
    lines = list(decode.iter_lines(iter([b"a\r\n\nb", b"c\r\n  \nlast"]), max_line_bytes=100))
    assert [(line.number, line.data) for line in lines] == [
        (1, b"a"), (2, b""), (3, b"bc"), (4, b"  "), (5, b"last")]
    assert [line.offset for line in lines] == [0, 3, 4, 8, 11]


def test_iter_lines_over_limit_keeps_counting_and_drops_content():
    blocks = iter([b"short\n", b"x" * 30, b"y" * 30 + b"\nnext\n", b"z" * 70])
    lines = list(decode.iter_lines(blocks, max_line_bytes=50))
    assert [(line.number, line.data, line.length) for line in lines] == [
        (1, b"short", 5), (2, None, 60), (3, b"next", 4), (4, None, 70)]


def test_a_byte_order_mark_at_the_start_of_the_stream_is_skipped():
    bom = decode.UTF8_BOM
    lines = list(decode.iter_lines(iter([bom[:2], bom[2:] + b'{"a": 1}\r\n', bom + b"x\n"]),
                                   max_line_bytes=100))
    # Only the stream's first line loses it (split over blocks too); later ones keep theirs.
    assert [(line.number, line.data) for line in lines] == [(1, b'{"a": 1}'), (2, bom + b"x")]
    (only,) = decode.iter_lines(iter([bom + b"no newline"]), max_line_bytes=100)
    assert only.data == b"no newline"
