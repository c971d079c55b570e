"""Bytes of an input file -> lines: format detection, streaming decompression, line split.

Pure streaming functions (no Beam). Memory is bounded by the flags: a zstd window above
``max_window_bytes`` and a line above ``max_line_bytes`` are refused with a clear reason;
compressed input is fed to the decoder one zstd block at a time (at most 128 KiB out per call),
so neither a whole file nor a decompression bomb's output is ever in memory.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import struct
import zlib
from typing import BinaryIO, Iterator

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
# Skippable frames: magic 0x184D2A50..0x184D2A5F, little-endian on disk.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"
_READ_BYTES = 1 << 20
_COMPRESSED_SUFFIXES = (".zst", ".zstd", ".gz")
UTF8_BOM = b"\xef\xbb\xbf"


class StreamError(Exception):
    """A damaged or refused input stream; ``reason`` is a stable dead-letter reason."""

    def __init__(self, reason: str, detail: str, *, offset: int | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.offset = offset


def detect_format(head: bytes, path: str) -> str:
    """'zstd', 'gzip' or 'plain', from the first bytes (names can lie: see corpus README)."""
    if head[:4] == ZSTD_MAGIC or (len(head) >= 4 and head[1:4] == _SKIPPABLE_TAIL
                                  and head[0] & 0xF0 == 0x50):
        return "zstd"
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    return "plain"


def iter_zstd(raw: BinaryIO, *, max_window_bytes: int) -> Iterator[bytes]:
    """Decompress every frame (skippable ones included) and detect truncation.

    The frame and block headers are walked here and the decoder is fed one block at a time:
    a block decodes to at most 128 KiB, so a hostile file (a "zstd bomb" of RLE blocks, ~4
    compressed bytes per 128 KiB) cannot make one call return gigabytes. Knowing where each
    frame ends also turns a stream cut before its first block (for which a plain streaming
    reader returns nothing and no error) into a ``truncated_stream`` error.
    """
    dctx = zstandard.ZstdDecompressor(max_window_size=max_window_bytes)
    source = _ExactReader(raw)
    while True:
        frame_start = source.offset
        magic = source.read(4, frame_start=frame_start, allow_eof=True)
        if not magic:
            return
        if magic[1:] == _SKIPPABLE_TAIL and magic[0] & 0xF0 == 0x50:
            (size,) = struct.unpack("<I", source.read(4, frame_start=frame_start))
            source.skip(size, frame_start=frame_start)
            continue
        if magic != ZSTD_MAGIC:
            raise StreamError(
                "corrupt_stream",
                f"no zstd frame at byte {frame_start} (bytes {magic.hex()}); the file is "
                "corrupt from here on; re-download it",
                offset=frame_start,
            )
        descriptor = source.read(1, frame_start=frame_start)
        header = magic + descriptor + source.read(
            _frame_header_rest(descriptor[0]), frame_start=frame_start)
        frame = dctx.decompressobj()
        _feed(frame, header, offset=frame_start, max_window_bytes=max_window_bytes)
        last = False
        while not last:
            block_at = source.offset
            block_header = source.read(3, frame_start=frame_start)
            value = int.from_bytes(block_header, "little")
            last, kind, size = bool(value & 1), (value >> 1) & 3, value >> 3
            body = source.read(1 if kind == 1 else size, frame_start=frame_start)  # 1: RLE
            out = _feed(frame, block_header + body, offset=block_at,
                        max_window_bytes=max_window_bytes)
            if out:
                yield out
        if descriptor[0] & 0x04:  # content checksum
            _feed(frame, source.read(4, frame_start=frame_start), offset=source.offset,
                  max_window_bytes=max_window_bytes)
        if not frame.eof:
            raise StreamError("corrupt_stream",
                              f"the zstd frame at byte {frame_start} does not end where its last "
                              "block says; re-download the file", offset=frame_start)


def _frame_header_rest(descriptor: int) -> int:
    """Bytes of a frame header after magic and descriptor (RFC 8878, section 3.1.1.1)."""
    single_segment = bool(descriptor & 0x20)
    window = 0 if single_segment else 1
    dictionary = (0, 1, 2, 4)[descriptor & 0x03]
    content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    return window + dictionary + content_size


def _feed(frame, data: bytes, *, offset: int, max_window_bytes: int) -> bytes:
    try:
        return frame.decompress(data)
    except zstandard.ZstdError as err:
        message = str(err)
        if "too much memory" in message or "window" in message.lower():
            raise StreamError(
                "window_too_large",
                f"zstd frame at byte {offset} needs a window larger than "
                f"--max_window_bytes={max_window_bytes} ({message}); raise the flag "
                "(up to 2147483648) if the file is trusted",
                offset=offset,
            ) from err
        raise StreamError(
            "corrupt_stream",
            f"zstd data near byte {offset} is corrupt ({message}); re-download the file",
            offset=offset,
        ) from err


class _ExactReader:
    """Reads exactly n bytes of a stream, or raises ``truncated_stream`` naming the frame."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self.offset = 0  # compressed bytes consumed

    def read(self, n: int, *, frame_start: int, allow_eof: bool = False) -> bytes:
        parts, missing = [], n
        while missing:
            data = self._raw.read(min(missing, _READ_BYTES))
            if not data:
                break
            parts.append(data)
            missing -= len(data)
            self.offset += len(data)
        data = b"".join(parts)
        if missing and not (allow_eof and not data):
            raise StreamError(
                "truncated_stream",
                f"the zstd frame starting at byte {frame_start} ends at byte {self.offset} "
                "before its end (truncated download?); re-download the file",
                offset=self.offset,
            )
        return data

    def skip(self, n: int, *, frame_start: int) -> None:
        while n:
            step = min(n, _READ_BYTES)
            self.read(step, frame_start=frame_start)
            n -= step


def iter_plain(raw: BinaryIO) -> Iterator[bytes]:
    while True:
        data = raw.read(_READ_BYTES)
        if not data:
            return
        yield data


@dataclasses.dataclass(frozen=True)
class Line:
    """One line: 1-based number, byte offset in the decompressed stream, content (no EOL)."""

    number: int
    offset: int
    data: bytes | None  # None: longer than max_line_bytes (content dropped)
    length: int


def iter_lines(blocks: Iterator[bytes], *, max_line_bytes: int) -> Iterator[Line]:
    """Split decompressed blocks into lines (\\n or \\r\\n), bounding the longest line; a UTF-8
    byte-order mark at the start of the stream is skipped."""
    buffer = bytearray()
    overflow = False  # the current line already exceeded the limit; its bytes are dropped
    overflow_len = 0
    number = 0
    offset = 0
    for block in blocks:
        start = 0
        while True:
            newline = block.find(b"\n", start)
            if newline < 0:
                rest = block[start:]
                if overflow:
                    overflow_len += len(rest)
                elif len(buffer) + len(rest) > max_line_bytes:
                    overflow, overflow_len = True, len(buffer) + len(rest)
                    buffer.clear()
                else:
                    buffer += rest
                break
            piece = block[start:newline]
            number += 1
            if overflow or len(buffer) + len(piece) > max_line_bytes:
                length = (overflow_len if overflow else len(buffer)) + len(piece)
                yield Line(number, offset, None, length)
            else:
                data = bytes(buffer) + piece if buffer else piece
                yield Line(number, offset, _content(data, number), len(data))
            offset += (overflow_len if overflow else len(buffer)) + len(piece) + 1
            buffer.clear()
            overflow, overflow_len = False, 0
            start = newline + 1
    if buffer or overflow:  # last line without a trailing newline
        number += 1
        if overflow:
            yield Line(number, offset, None, overflow_len)
        else:
            data = bytes(buffer)
            yield Line(number, offset, _content(data, number), len(data))


def _content(data: bytes, number: int) -> bytes:
    """A line without its CR, and the first line without a UTF-8 byte-order mark (editors on
    Windows write one at the start of a file; it is not part of the first record)."""
    if number == 1 and data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    return data[:-1] if data.endswith(b"\r") else data


def open_blocks(raw: BinaryIO, *, path: str, max_window_bytes: int) -> tuple[str, Iterator[bytes]]:
    """Detect the format from the first bytes and return (format, decompressed blocks)."""
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw, 1 << 20)
    head = buffered.peek(4)[:4]
    if not head and path.endswith(_COMPRESSED_SUFFIXES):
        # Never a valid zstd/gzip file (zstd -t fails too): most likely a failed download.
        raise StreamError("truncated_stream", "the file is empty (0 bytes), not even a "
                          "compression header (failed download?); re-download or remove it",
                          offset=0)
    fmt = detect_format(head, path)
    if fmt == "zstd":
        return fmt, iter_zstd(buffered, max_window_bytes=max_window_bytes)
    if fmt == "gzip":
        return fmt, iter_gzip(buffered)
    return fmt, iter_plain(buffered)


def iter_gzip(raw: BinaryIO) -> Iterator[bytes]:
    """gzip via the standard library reader, which raises EOFError on truncation."""
    reader = gzip.GzipFile(fileobj=raw, mode="rb")
    try:
        while True:
            # read1, not read: read() drops the bytes it decoded in the same call as EOFError.
            data = reader.read1(_READ_BYTES)
            if not data:
                return
            yield data
    except EOFError as err:
        raise StreamError("truncated_stream", f"gzip stream ends early ({err}); re-download",
                          offset=None) from err
    except (OSError, zlib.error) as err:
        raise StreamError("corrupt_stream", f"gzip data is corrupt ({err})") from err
