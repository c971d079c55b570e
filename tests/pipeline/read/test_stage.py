"""stage.py without Beam: documents in file order, chunking by chunk_bytes, dead letters, stats."""

import functools
import json
import os
import random
import uuid
from pathlib import Path

import fsspec
import pytest
from apache_beam.pvalue import TaggedOutput

from common.errors import DataError
from datagen.pile_files import encode_lines, pile_doc, write_jsonl, write_jsonl_gz, write_jsonl_zst
from pipeline.config import ReadConfig
from pipeline.read import stage as read
from pipeline.read.inputs import InputFile
from pipeline.read.parse import UNKNOWN_SUBSET
from pipeline.read.stage import Chunk, DeadLetter, ReadStats, iter_documents, read_file


def _file(path, *, index=3) -> InputFile:
    return InputFile(index=index, path=str(path), bytes=os.path.getsize(path))


def _read(path, **config) -> list:
    return list(read_file(_file(path), config=ReadConfig(**config)))


def _of(items, kind) -> list:
    return [item for item in items if isinstance(item, kind)]


def _texts(chunk: Chunk) -> list[str]:
    return [doc.text for doc in chunk.documents]


def test_chunks_close_once_their_lines_reach_chunk_bytes(tmp_path):
    # ~650-byte lines, chunk_bytes=1024: 650 < 1024, 1300 >= 1024 -> two documents a chunk.
    texts = ["a" * 600, "b" * 600, "c" * 600, "d" * 600, "e" * 10]
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc(t) for t in texts])
    chunks = _of(_read(path, chunk_bytes=1024), Chunk)
    assert [(c.file_index, c.chunk_index) for c in chunks] == [(3, 0), (3, 1), (3, 2)]
    assert [_texts(c) for c in chunks] == [texts[0:2], texts[2:4], texts[4:]]
    assert [[d.line for d in c.documents] for c in chunks] == [[1, 2], [3, 4], [5]]


def test_chunk_boundary_is_inclusive_and_counts_line_bytes_with_their_newline(tmp_path):
    # A chunk is cut by the bytes of its lines as read (JSON, line ending counted once),
    # not by the UTF-8 size of their text.
    texts = ["é" * 256, "b" * 512, "c"]
    lines = encode_lines([pile_doc(t) for t in texts])
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc(t) for t in texts])
    exact = len(lines[0]) + len(lines[1])
    chunks = _of(_read(path, chunk_bytes=exact), Chunk)
    assert [_texts(c) for c in chunks] == [texts[:2], texts[2:]]
    assert chunks[0].documents[0].text_bytes == 512
    chunks = _of(_read(path, chunk_bytes=exact + 1), Chunk)
    assert [_texts(c) for c in chunks] == [texts]


def test_a_document_larger_than_chunk_bytes_is_never_split(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc("x" * 5000), pile_doc("y")])
    chunks = _of(_read(path, chunk_bytes=1024), Chunk)
    assert [_texts(c) for c in chunks] == [["x" * 5000], ["y"]]


def _mixed_lines():
    first = pile_doc("a" * 600)
    return first, [
        first,                                      # 1: document
        '{"text": 1}',                              # 2: rejected, text_not_string
        pile_doc("b" * 600),                        # 3: document; 1200 bytes close chunk 0
        "",                                         # 4: filtered, blank_line
        pile_doc(""),                               # 5: filtered, empty_text
        pile_doc("c", subset="Books3"),             # 6: filtered, subset_excluded
        pile_doc("tail"),                           # 7: document, in the final chunk
    ]


def test_items_come_in_file_order_with_stats_last(tmp_path):
    first, lines = _mixed_lines()
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    items = _read(path, chunk_bytes=1024, exclude_subsets=("Books3",))
    assert [type(item) for item in items] == [DeadLetter, Chunk, Chunk, ReadStats]
    assert items[0] == DeadLetter(
        file=path, file_index=3, line=2, offset=len(json.dumps(first)) + 1,
        reason="text_not_string", detail='"text" is int', excerpt='{"text": 1}',
    )
    assert _texts(items[1]) == ["a" * 600, "b" * 600]
    assert _texts(items[2]) == ["tail"]


def test_stats_account_for_every_line(tmp_path):
    _, lines = _mixed_lines()
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    stats = _read(path, chunk_bytes=1024, exclude_subsets=("Books3",))[-1]
    assert (stats.file_index, stats.path, stats.format) == (3, path, "plain")
    assert (stats.lines, stats.documents) == (7, 3)
    assert stats.filtered == {"blank_line": 1, "empty_text": 1, "subset_excluded": 1}
    assert stats.rejected == {"text_not_string": 1}
    assert stats.lines == stats.accounted_lines() == stats.documents + sum(
        stats.filtered.values()) + sum(stats.rejected.values())


def test_iter_documents_yields_only_documents_in_file_order(tmp_path):
    _, lines = _mixed_lines()
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    docs = list(iter_documents(_file(path), config=ReadConfig(chunk_bytes=1024,
                                                              exclude_subsets=("Books3",))))
    assert [(d.text, d.line, d.subset) for d in docs] == [
        ("a" * 600, 1, "Pile-CC"), ("b" * 600, 3, "Pile-CC"), ("tail", 7, "Pile-CC")]


@pytest.mark.parametrize("writer,fmt", [
    (write_jsonl, "plain"),
    (write_jsonl_gz, "gzip"),
    (functools.partial(write_jsonl_zst, frames=2, split_line=True), "zstd"),
])
def test_every_format_gives_the_same_documents(tmp_path, writer, fmt):
    path = writer(tmp_path / "a.jsonl.zst", [pile_doc("one"), pile_doc("two"), pile_doc("3")])
    items = _read(path)
    assert [_texts(c) for c in _of(items, Chunk)] == [["one", "two", "3"]]
    assert items[-1].format == fmt


def test_line_too_long_is_a_dead_letter_without_its_content(tmp_path):
    long_doc = pile_doc("x" * 2000)
    path = write_jsonl(tmp_path / "a.jsonl", [long_doc, pile_doc("ok")])
    items = _read(path, max_line_bytes=1024)
    size = len(json.dumps(long_doc))
    assert items[0] == DeadLetter(file=path, file_index=3, line=1, offset=0,
                                  reason="line_too_long",
                                  detail=f"{size} bytes > --max_line_bytes=1024", excerpt="")
    assert _texts(items[1]) == ["ok"]
    assert items[1].documents[0].line == 2
    assert (items[-1].lines, items[-1].rejected) == (2, {"line_too_long": 1})
    assert items[-1].accounted_lines() == 2  # Read rejects it itself: a line all the same


def test_truncated_stream_keeps_the_lines_before_it(tmp_path):
    # Two frames of two lines each; cutting 5 bytes loses the second frame's only block.
    path = write_jsonl_zst(tmp_path / "a.jsonl.zst",
                           [pile_doc(t) for t in ("l1", "l2", "l3", "l4")], frames=2)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-5])
    items = _read(path)
    assert [type(item) for item in items] == [DeadLetter, Chunk, ReadStats]
    letter, chunk, stats = items
    assert (letter.line, letter.offset, letter.reason) == (3, len(data) - 5, "truncated_stream")
    assert _texts(chunk) == ["l1", "l2"]
    assert (stats.lines, stats.documents, stats.rejected) == (2, 2, {"truncated_stream": 1})
    assert (stats.stream_errors, stats.accounted_lines()) == (1, 2)  # the cut is not a line


def test_unreadable_file_is_one_dead_letter(tmp_path):
    missing = str(tmp_path / "gone.jsonl")
    items = list(read_file(InputFile(index=0, path=missing, bytes=0), config=ReadConfig()))
    assert [type(item) for item in items] == [DeadLetter, ReadStats]
    letter, stats = items
    assert (letter.file, letter.line, letter.offset, letter.reason) == (
        missing, None, None, "unreadable_file")
    assert letter.detail.startswith("FileNotFoundError: ")
    assert (stats.lines, stats.documents, stats.rejected) == (0, 0, {"unreadable_file": 1})
    assert (stats.stream_errors, stats.accounted_lines()) == (1, 0)


def test_selects_include_exclude_and_default():
    assert ReadConfig().selects("Github") and ReadConfig().selects(UNKNOWN_SUBSET)
    include = ReadConfig(include_subsets=("Github", "ArXiv"))
    assert include.selects("ArXiv") and not include.selects("Pile-CC")
    assert not include.selects(UNKNOWN_SUBSET)
    exclude = ReadConfig(exclude_subsets=("Books3",))
    assert exclude.selects("Github") and exclude.selects(UNKNOWN_SUBSET)
    assert not exclude.selects("Books3")


def test_include_subsets_filters_while_reading(tmp_path):
    lines = [pile_doc("g", subset="Github"), pile_doc("p"), '"bare"', pile_doc("h", "Github")]
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    items = _read(path, include_subsets=("Github",))
    assert [_texts(c) for c in _of(items, Chunk)] == [["g", "h"]]
    assert items[-1].filtered == {"subset_excluded": 2}


def test_reads_an_fsspec_url():
    fs = fsspec.filesystem("memory")
    root = f"/read-{uuid.uuid4().hex}"
    fs.pipe(f"{root}/a.jsonl", b'{"text": "from memory"}\n\n"second"\n')
    try:
        url = f"memory://{root}/a.jsonl"
        items = list(read_file(InputFile(index=0, path=url, bytes=0), config=ReadConfig()))
        assert [_texts(c) for c in _of(items, Chunk)] == [["from memory", "second"]]
        assert items[-1].filtered == {"blank_line": 1}
    finally:
        fs.rm(root, recursive=True)


def _read_then_parse(path, config):
    """The two DoFns of ReadDocuments, by hand: lines of one file, then each chunk parsed."""
    file = _file(path)
    lines = list(read._ReadLinesFn(config).process(file))
    paths = ("",) * file.index + (file.path,)  # by file index
    parse_fn = read._ParseChunkFn(config, paths)
    parse_fn.setup()
    parsed = [item for raw in lines if isinstance(raw, read.RawChunk)
              for item in parse_fn.process(raw)]
    return lines, parsed


def test_read_and_parse_fns_tag_dead_letters_and_stats(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc("ok"), "{broken"])
    lines, parsed = _read_then_parse(path, ReadConfig())
    assert [type(x) for x in lines] == [read.RawChunk, TaggedOutput]
    assert lines[0].numbers == (1, 2) and lines[0].lines()[1] == b"{broken"
    assert lines[1].tag == read.READ_STATS and lines[1].value.lines == 2
    assert [type(x) for x in parsed] == [TaggedOutput, Chunk, TaggedOutput]
    assert (parsed[0].tag, parsed[0].value.reason) == (read.DEAD_LETTERS, "invalid_json")
    assert parsed[0].value.file == path and parsed[0].value.line == 2
    stats = parsed[2].value
    assert parsed[2].tag == read.READ_STATS
    assert (stats.documents, stats.rejected, stats.lines) == (1, {"invalid_json": 1}, 0)


def test_parse_fn_fails_on_the_first_bad_record_naming_file_and_line(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc("ok"), "{broken"])
    with pytest.raises(DataError) as err:
        _read_then_parse(path, ReadConfig(on_bad_record="fail"))
    assert path in str(err.value) and "line 2" in str(err.value)
    assert "--on_bad_record=skip" in str(err.value)


def test_read_stats_parts_merge_into_the_whole_file(tmp_path):
    first, lines = _mixed_lines()
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    config = ReadConfig(chunk_bytes=1024, exclude_subsets=("Books3",))
    (whole,) = _of(_read(path, chunk_bytes=1024, exclude_subsets=("Books3",)), ReadStats)
    raw, parsed = _read_then_parse(path, config)
    parts = [x.value for x in raw + parsed
             if isinstance(x, TaggedOutput) and x.tag == read.READ_STATS]
    assert len(parts) == 3  # the file's lines, then each of its two chunks
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    assert merged == whole


@pytest.mark.parametrize("writer", [write_jsonl, write_jsonl_gz,
                                    functools.partial(write_jsonl_zst, frames=4)])
def test_chunks_input_ranges_tile_the_file(tmp_path, writer):
    # Progress sums each written chunk's compressed bytes: the ranges must neither overlap
    # nor leave a gap, so that they add up to the file's size. 1.6 to 3.2 MB of barely
    # compressible text: more than one 1 MiB read of the compressed file.
    texts = [random.Random(n).randbytes(40000).hex() for n in range(40)]
    path = writer(tmp_path / "a.jsonl.zst", [pile_doc(text) for text in texts])
    chunks = _of(_read(path, chunk_bytes=256 * 1024), Chunk)
    ranges = [(c.input_start, c.input_offset) for c in chunks]
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == os.path.getsize(path)
    assert all(end == start for (_, end), (start, _) in zip(ranges, ranges[1:]))
    assert all(start <= end for start, end in ranges)
    assert len({end for _, end in ranges}) > 1  # the ranges do move along the file


def test_a_file_starting_with_a_byte_order_mark_loses_no_document(tmp_path):
    plain = tmp_path / "bom.jsonl"
    plain.write_bytes(b"\xef\xbb\xbf" + json.dumps(pile_doc("first")).encode() + b"\n"
                      + json.dumps(pile_doc("second")).encode() + b"\n")
    items = _read(plain)
    assert [text for chunk in _of(items, Chunk) for text in _texts(chunk)] == ["first", "second"]
    assert _of(items, DeadLetter) == []


def test_compressed_raw_chunks_give_the_same_lines(tmp_path):
    texts = [f"document {n} " * 40 for n in range(30)] + [""]
    path = write_jsonl(tmp_path / "a.jsonl", [pile_doc(t) for t in texts] + ["{broken", ""])
    plain = [x for x in read.read_lines(_file(path), config=ReadConfig(chunk_bytes=4096))
             if isinstance(x, read.RawChunk)]
    fn = read._ReadLinesFn(ReadConfig(chunk_bytes=4096), compress=True)
    fn.setup()
    packed = [x for x in fn.process(_file(path)) if isinstance(x, read.RawChunk)]
    fn.teardown()
    assert all(c.compressed for c in packed) and len(packed) == len(plain) > 3
    assert [c.lines() for c in packed] == [c.lines() for c in plain]
    assert [(c.chunk_index, c.numbers, c.offsets) for c in packed] == [
        (c.chunk_index, c.numbers, c.offsets) for c in plain]
    assert sum(len(c.data) for c in packed) < sum(len(c.data) for c in plain) / 2


def test_chunks_are_sized_without_being_serialized():
    # Beam sizes sampled elements with their coder; ChunkCoder asks the chunk itself.
    import apache_beam as beam

    from pipeline.read.chunk_coder import ChunkCoder

    raw = read.RawChunk(0, 0, (1, 2), (0, 4), (3, 5), b"abcdefgh")
    chunk = Chunk(0, 0, (read.parse.Document("héllo", "A", 1, 6),))
    for value, size in ((raw, 8 + 48), (chunk, 6)):
        coder = beam.coders.registry.get_coder(type(value))
        assert isinstance(coder, ChunkCoder)
        assert coder.get_impl().estimate_size(value) == size
        assert coder.decode(coder.encode(value)) == value
