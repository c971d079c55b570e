"""Writers of synthetic Pile-format files: JSON Lines, plain, gzip or zstd (many frame layouts).

Tests and benchmarks build their inputs with these helpers instead of reading a corpus, e.g.::

    path = write_jsonl_zst(tmp_path / "a.jsonl.zst", [pile_doc("hi"), '{"broken'], frames=2)

A record is either a ``dict`` (serialized as the Pile does: ``json.dumps`` with its defaults,
so non-ASCII is ``\\uXXXX``-escaped) or a raw line as ``str`` (UTF-8 encoded) or ``bytes``
(written as is, so a test can write invalid UTF-8 or broken JSON). Every record is followed by
``line_ending`` unless ``final_newline=False`` drops the last one.

The zstd writer reproduces the layouts a reader must cope with:

* ``frames=N`` -- N independent frames concatenated (what ``cat a.zst b.zst`` or
  multi-threaded writers give); ``split_line=True`` cuts each frame boundary in the middle of a
  line, so a line is only whole once frames are read across.
* ``skippable_prefix=True`` -- a skippable frame (magic ``0x184D2A50``) before the data.
* ``long_window=True`` -- window log 31, so the header declares a 2 GiB window, as
  ``zstd --long=31`` does. ``ZstdDecompressor()`` refuses such a frame ("Frame requires too
  much memory for decoding"); ``ZstdDecompressor(max_window_size=2**31)`` reads it. Long
  distance matching is left off: it does not change the header and costs ~130 MB per call.

Frames are written in streaming mode, so (like the Pile's) headers carry no content size.
``write_lines_zst`` compresses lines already encoded (the built-in sample, ``datagen.sample``,
writes its files with it).
``read_zst``, ``read_records`` and ``zst_frames`` read zstd files back the plain way, for checks.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
from collections.abc import Iterable, Mapping, Sequence

import zstandard

Record = Mapping | str | bytes
PathLike = str | os.PathLike[str]

SKIPPABLE_MAGIC = 0x184D2A50
SKIPPABLE_PAYLOAD = b"pilepack test skippable frame"  # bytes a reader must never see
LONG_WINDOW_LOG = 31


def pile_doc(text: str, subset: str = "Pile-CC") -> dict:
    """A Pile record: ``{"text": text, "meta": {"pile_set_name": subset}}``."""
    return {"text": text, "meta": {"pile_set_name": subset}}


def encode_lines(
    records: Iterable[Record], *, line_ending: str = "\n", final_newline: bool = True
) -> list[bytes]:
    """Each record as the bytes of one line, line ending included (see the module docstring)."""
    ending = line_ending.encode("utf-8")
    lines = []
    for record in records:
        if isinstance(record, bytes):
            body = record
        elif isinstance(record, str):
            body = record.encode("utf-8")
        elif isinstance(record, Mapping):
            body = json.dumps(record).encode("utf-8")
        else:
            raise TypeError(f"record must be a dict, str or bytes, got {type(record).__name__}")
        lines.append(body + ending)
    if lines and not final_newline:
        lines[-1] = lines[-1][: len(lines[-1]) - len(ending)]
    return lines


def write_jsonl(
    path: PathLike,
    records: Iterable[Record],
    *,
    line_ending: str = "\n",
    final_newline: bool = True,
) -> str:
    """Writes uncompressed JSON Lines; returns the path as ``str``."""
    data = b"".join(encode_lines(records, line_ending=line_ending, final_newline=final_newline))
    with open(path, "wb") as f:
        f.write(data)
    return os.fspath(path)


def write_jsonl_gz(
    path: PathLike,
    records: Iterable[Record],
    *,
    line_ending: str = "\n",
    final_newline: bool = True,
) -> str:
    """Writes gzip-compressed JSON Lines (no name, ``mtime=0``: the bytes are reproducible)."""
    data = b"".join(encode_lines(records, line_ending=line_ending, final_newline=final_newline))
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
    return os.fspath(path)


def write_jsonl_zst(
    path: PathLike,
    records: Iterable[Record],
    *,
    frames: int = 1,
    level: int = 3,
    skippable_prefix: bool = False,
    long_window: bool = False,
    line_ending: str = "\n",
    split_line: bool = False,
    final_newline: bool = True,
) -> str:
    """Writes zstd-compressed JSON Lines; returns the path as ``str``.

    Args:
        path: File to write.
        records: Dicts, or raw lines as ``str``/``bytes``.
        frames, level, skippable_prefix, long_window, split_line: The layout, as for
            :func:`write_lines_zst`.
        line_ending: Appended to every record.
        final_newline: False drops the last record's line ending.

    Raises:
        ValueError: As :func:`write_lines_zst`.
    """
    lines = encode_lines(records, line_ending=line_ending, final_newline=final_newline)
    return write_lines_zst(path, lines, frames=frames, level=level,
                           skippable_prefix=skippable_prefix, long_window=long_window,
                           split_line=split_line)


def write_lines_zst(
    path: PathLike,
    lines: Sequence[bytes],
    *,
    frames: int = 1,
    level: int = 3,
    skippable_prefix: bool = False,
    long_window: bool = False,
    split_line: bool = False,
) -> str:
    """Compresses ``lines`` (line endings included, as :func:`encode_lines` gives them) into a
    zstd file; returns the path as ``str``.

    Args:
        path: File to write.
        lines: The bytes of each line; the file's content is their concatenation.
        frames: Number of independent zstd frames. The lines are dealt into ``frames``
            consecutive groups of near-equal count (more frames than lines gives empty
            frames, which are valid).
        level: zstd compression level.
        skippable_prefix: Put a skippable frame before the data.
        long_window: Declare a 2 GiB window (window log 31) in every frame header.
        split_line: Move each frame boundary from between two lines into the middle of the
            next line. Needs at least ``frames`` lines, each of two bytes or more.

    Raises:
        ValueError: ``frames`` < 1, or ``split_line`` cannot put every cut inside a line.
    """
    chunks = frame_chunks(list(lines), frames=frames, split_line=split_line)
    if long_window:
        params = zstandard.ZstdCompressionParameters.from_level(level, window_log=LONG_WINDOW_LOG)
        compressor = zstandard.ZstdCompressor(compression_params=params)
    else:
        compressor = zstandard.ZstdCompressor(level=level)
    out = [skippable_frame(SKIPPABLE_PAYLOAD)] if skippable_prefix else []
    for chunk in chunks:
        stream = compressor.compressobj()  # streaming: no content size in the header
        out.append(stream.compress(chunk) + stream.flush())
    with open(path, "wb") as f:
        f.write(b"".join(out))
    return os.fspath(path)


def frame_chunks(lines: list[bytes], *, frames: int, split_line: bool = False) -> list[bytes]:
    """The uncompressed bytes of each frame; their concatenation is ``b"".join(lines)``.

    >>> frame_chunks([b"ab\\n", b"cd\\n", b"ef\\n"], frames=2)
    [b'ab\\n', b'cd\\nef\\n']
    >>> frame_chunks([b"ab\\n", b"cd\\n", b"ef\\n"], frames=2, split_line=True)
    [b'ab\\nc', b'd\\nef\\n']
    """
    if frames < 1:
        raise ValueError(f"frames must be >= 1, got {frames}.")
    n = len(lines)
    bounds = [g * n // frames for g in range(frames + 1)]  # line index where each frame starts
    data = b"".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))  # byte offset of each line, and of the end
    cuts = [starts[i] for i in bounds]
    if split_line:
        if frames > n:
            raise ValueError(f"split_line needs at least frames={frames} lines, got {n}.")
        for g in range(1, frames):
            line = lines[bounds[g]]
            if len(line) < 2:
                raise ValueError(f"split_line cannot cut line {bounds[g]} ({line!r}) in two.")
            cuts[g] += len(line) // 2
    return [data[cuts[g] : cuts[g + 1]] for g in range(frames)]


def skippable_frame(payload: bytes, *, magic_variant: int = 0) -> bytes:
    """A zstd skippable frame: magic ``0x184D2A5?`` and payload length (little-endian), payload."""
    if not 0 <= magic_variant <= 15:
        raise ValueError(f"magic_variant must be in 0..15, got {magic_variant}.")
    return struct.pack("<II", SKIPPABLE_MAGIC + magic_variant, len(payload)) + payload


# --- Reading back, for checks ------------------------------------------------------------------


def read_zst(path: PathLike, **decompressor_kwargs) -> bytes:
    """The decompressed content of every frame of a zstd file (``ZstdDecompressor`` kwargs)."""
    with open(path, "rb") as f:
        reader = zstandard.ZstdDecompressor(**decompressor_kwargs).stream_reader(
            f, read_across_frames=True
        )
        return reader.read()


def read_records(path: PathLike) -> list[dict]:
    """The JSON records of a zstd JSON Lines file."""
    return [json.loads(line) for line in read_zst(path).splitlines()]


def zst_frames(data: bytes) -> list[bytes]:
    """Decompressed content of each frame of ``data``, one decompressobj per frame."""
    contents = []
    while data:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        contents.append(dobj.decompress(data))
        data = dobj.unused_data
    return contents
