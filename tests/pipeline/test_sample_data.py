"""Tests for pipeline/sample_data.py and the test-input writers in tests/corpus_files.py."""

from __future__ import annotations

import gzip
import io
import json
import os

import pytest
import zstandard

from pipeline import sample_data
from tests import corpus_files

SMALL = 300_000  # total_bytes for the quick builds


def _read_zst(path: str, **decompressor_kwargs) -> bytes:
    with open(path, "rb") as f:
        reader = zstandard.ZstdDecompressor(**decompressor_kwargs).stream_reader(
            f, read_across_frames=True
        )
        return reader.read()


def _records(path: str) -> list[dict]:
    return [json.loads(line) for line in _read_zst(path).splitlines()]


def _frames(data: bytes) -> list[bytes]:
    """Decompressed content of each frame of ``data``, one decompressobj per frame."""
    contents = []
    while data:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        contents.append(dobj.decompress(data))
        data = dobj.unused_data
    return contents


def _dir_bytes(path: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out[name] = f.read()
    return out


@pytest.fixture(scope="module")
def default_sample(tmp_path_factory) -> sample_data.SampleFiles:
    return sample_data.build_sample(out_dir=str(tmp_path_factory.mktemp("default")))


# --- the default sample ---------------------------------------------------------------------


def test_default_sample_size_is_near_target(default_sample):
    assert 0.95 * 4_000_000 <= default_sample.json_bytes <= 4_000_000
    assert 500_000 <= default_sample.compressed_bytes <= 2_000_000
    for path in (*default_sample.train_paths, default_sample.val_path):
        assert os.path.getsize(path) == default_sample.file_bytes[os.path.basename(path)]


def test_default_sample_file_names(default_sample):
    assert default_sample.train_files == ("train-00.jsonl.zst", "train-01.jsonl.zst")
    assert default_sample.val_file == "val.jsonl.zst"
    assert default_sample.train_paths + [default_sample.val_path] == [
        os.path.join(default_sample.out_dir, name)
        for name in ("train-00.jsonl.zst", "train-01.jsonl.zst", "val.jsonl.zst")
    ]
    assert sorted(os.listdir(default_sample.out_dir)) == [
        "sample_info.json",
        "train-00.jsonl.zst",
        "train-01.jsonl.zst",
        "val.jsonl.zst",
    ]


def test_every_line_is_a_pile_record_serialized_like_the_pile(default_sample):
    json_bytes = 0
    for path in (*default_sample.train_paths, default_sample.val_path):
        name = os.path.basename(path)
        data = _read_zst(path)
        json_bytes += len(data)
        assert data.endswith(b"\n")
        lines = data.split(b"\n")[:-1]
        assert len(lines) == default_sample.doc_counts[name]
        per_subset = dict.fromkeys(sample_data.SUBSET_ORDER, 0)
        for line in lines:
            record = json.loads(line)
            assert list(record) == ["text", "meta"]
            assert list(record["meta"]) == ["pile_set_name"]
            assert isinstance(record["text"], str) and record["text"].strip()
            assert line + b"\n" == sample_data.pile_line(
                text=record["text"], subset=record["meta"]["pile_set_name"]
            )
            assert line.isascii()  # json.dumps' default ensure_ascii=True, as in the Pile
            per_subset[record["meta"]["pile_set_name"]] += 1
        assert per_subset == default_sample.file_subset_counts[name]
    assert json_bytes == default_sample.json_bytes


def test_files_are_single_streamed_frames_without_content_size(default_sample):
    for path in (*default_sample.train_paths, default_sample.val_path):
        with open(path, "rb") as f:
            data = f.read()
        params = zstandard.get_frame_parameters(data)
        assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
        assert len(_frames(data)) == 1


def test_subsets_are_present_and_interleaved(default_sample):
    counts = default_sample.subset_counts
    assert {"Github", "StackExchange", "Wikipedia (en)", "Pile-CC"} <= {
        subset for subset, n in counts.items() if n > 0
    }
    for name in default_sample.train_files:
        path = os.path.join(default_sample.out_dir, name)
        subsets = [r["meta"]["pile_set_name"] for r in _records(path)]
        assert len(set(subsets[:40])) >= 3, "train files should be shuffled across subsets"
        assert abs(len(subsets) - default_sample.num_docs * 0.45) < 0.1 * default_sample.num_docs


def test_val_holds_about_a_tenth_of_every_subset(default_sample):
    val = default_sample.file_subset_counts["val.jsonl.zst"]
    assert 0.07 <= sum(val.values()) / default_sample.num_docs <= 0.11
    for subset, total in default_sample.subset_counts.items():
        assert val[subset] == total // 10  # every 10th selected document of each subset


def test_info_file_round_trips(default_sample):
    assert sample_data.load_sample(default_sample.out_dir) == default_sample


# --- determinism, caching, flags ----------------------------------------------------------


def test_build_is_byte_identical_across_runs(tmp_path):
    a = sample_data.build_sample(out_dir=str(tmp_path / "a"), total_bytes=SMALL)
    b = sample_data.build_sample(out_dir=str(tmp_path / "b"), total_bytes=SMALL)
    assert _dir_bytes(a.out_dir) == _dir_bytes(b.out_dir)
    assert a.json_bytes <= SMALL
    assert a.json_bytes >= 0.9 * SMALL


def test_ensure_sample_builds_once_then_reuses(tmp_path, monkeypatch):
    sample_dir = str(tmp_path / "cache" / "sample")
    first = sample_data.ensure_sample(sample_dir=sample_dir, total_bytes=SMALL)
    assert first.out_dir == sample_dir
    assert os.listdir(tmp_path / "cache") == ["sample"]  # the temporary build dir is gone

    def fail(**kwargs):
        raise AssertionError("ensure_sample rebuilt a finished sample")

    monkeypatch.setattr(sample_data, "build_sample", fail)
    assert sample_data.ensure_sample(sample_dir=sample_dir, total_bytes=SMALL) == first


def test_ensure_sample_refuses_an_unfinished_directory(tmp_path):
    (tmp_path / "sample").mkdir()
    (tmp_path / "sample" / "train-00.jsonl.zst").write_bytes(b"partial")
    with pytest.raises(FileExistsError, match="sample_info.json"):
        sample_data.ensure_sample(sample_dir=str(tmp_path / "sample"), total_bytes=SMALL)
    assert os.listdir(tmp_path) == ["sample"]


def test_default_sample_dir_hashes_the_parameters(tmp_path):
    root = str(tmp_path)
    a = sample_data.default_sample_dir(cache_root=root)
    assert a == sample_data.default_sample_dir(cache_root=root)
    assert a != sample_data.default_sample_dir(cache_root=root, total_bytes=SMALL)
    assert a != sample_data.default_sample_dir(cache_root=root, num_train_files=3)
    assert os.path.dirname(a) == root
    assert os.path.basename(a).startswith("sample-py3.")


def test_main_writes_and_describes_the_sample(tmp_path, capsys):
    out_dir = str(tmp_path / "out")
    assert sample_data.main([f"--out_dir={out_dir}", f"--total_bytes={SMALL}"]) == 0
    printed = capsys.readouterr().out
    assert "train-00.jsonl.zst" in printed and "val.jsonl.zst" in printed
    assert "Github" in printed
    assert sample_data.load_sample(out_dir).json_bytes <= SMALL


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"total_bytes": 0}, "total_bytes must be an int >= 1"),
        ({"total_bytes": 2_000}, "too small"),
        ({"num_train_files": 0}, "num_train_files"),
        ({"val_every": 1}, "val_every"),
    ],
)
def test_bad_parameters_are_refused(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sample_data.build_sample(out_dir=str(tmp_path / "out"), **kwargs)


def test_stale_train_files_from_another_build_are_refused(tmp_path):
    out_dir = str(tmp_path / "out")
    sample_data.build_sample(out_dir=out_dir, total_bytes=SMALL, num_train_files=3)
    with pytest.raises(ValueError, match="train-02.jsonl.zst"):
        sample_data.build_sample(out_dir=out_dir, total_bytes=SMALL, num_train_files=2)


def test_pile_line_matches_lm_dataformat():
    assert sample_data.pile_line(text="héllo\n", subset="Github") == (
        b'{"text": "h\\u00e9llo\\n", "meta": {"pile_set_name": "Github"}}\n'
    )


# --- sources, on a hand-made stdlib tree -------------------------------------------------

_LEAD = "Lead paragraph of a module. " * 8  # 224 characters: long enough for an article
_MOD_PY = (
    f'"""{_LEAD}"""\n\ndef public():\n    """Does things."""\n\n'
    'def _private():\n    """Hidden."""\n'
)
_TOPICS_PY = "topics = {'if': 'The if statement.', 'for': 'The for statement.'}\n"


def _fake_stdlib(root) -> None:
    files = {
        "mod.py": _MOD_PY.encode(),
        "pkg/__init__.py": b'"""Short."""\n',
        "empty.py": b"\n\n",
        "latin1.py": b"# caf\xe9\n",
        "pydoc_data/topics.py": _TOPICS_PY.encode(),
        "README.txt": b"Read me.\n",
        "LICENSE.txt": b"A license.\n",
        "site-packages/third.py": b'"""Not stdlib."""\n',
        "__pycache__/mod.py": b"x = 1\n",
        "lib2to3/tests/data/README": b"test data\n",
        "test/test_x.py": b"x = 1\n",
        "test/test_email/data/msg_01.txt": b"From: a@example.com\n\nhi\n",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_documents_come_from_the_expected_files(tmp_path):
    _fake_stdlib(tmp_path / "lib")
    files = sample_data.build_sample(
        out_dir=str(tmp_path / "out"), stdlib_dir=str(tmp_path / "lib"), val_every=2
    )
    docs = set()
    for path in (*files.train_paths, files.val_path):
        docs |= {(r["meta"]["pile_set_name"], r["text"]) for r in _records(path)}
    assert docs == {
        ("Github", _MOD_PY),
        ("Github", '"""Short."""\n'),
        ("Github", _TOPICS_PY),
        ("StackExchange", "The if statement."),
        ("StackExchange", "The for statement."),
        ("Wikipedia (en)", f"mod\n\n{_LEAD}\n\npublic\n\nDoes things."),
        ("Pile-CC", "Read me.\n"),
        ("Pile-CC", "A license.\n"),
        ("Enron Emails", "From: a@example.com\n\nhi\n"),
    }
    # val_every=2: the second selected document of each subset with two or more is held out.
    assert files.doc_counts == {
        "train-00.jsonl.zst": 3,
        "train-01.jsonl.zst": 3,
        "val.jsonl.zst": 3,
    }


# --- tests/corpus_files.py -------------------------------------------------------------------

_DOCS = [corpus_files.pile_doc(f"document {i} ünïcode", subset="Github") for i in range(10)]
_DOC_BYTES = b"".join(json.dumps(d).encode() + b"\n" for d in _DOCS)


def test_pile_doc():
    assert corpus_files.pile_doc("x") == {"text": "x", "meta": {"pile_set_name": "Pile-CC"}}


def test_raw_lines_are_written_verbatim(tmp_path):
    path = corpus_files.write_jsonl(
        tmp_path / "a.jsonl",
        [{"text": "é"}, '{"broken', b"\xff\xfe"],
        line_ending="\r\n",
        final_newline=False,
    )
    with open(path, "rb") as f:
        assert f.read() == b'{"text": "\\u00e9"}\r\n{"broken\r\n\xff\xfe'


def test_gzip_round_trip_is_reproducible(tmp_path):
    a = corpus_files.write_jsonl_gz(tmp_path / "a.jsonl.gz", _DOCS)
    b = corpus_files.write_jsonl_gz(tmp_path / "b.jsonl.gz", _DOCS)
    with open(a, "rb") as fa, open(b, "rb") as fb:
        data = fa.read()
        assert data == fb.read()
    assert gzip.decompress(data) == _DOC_BYTES


@pytest.mark.parametrize("split_line", [False, True])
def test_multi_frame_round_trip(tmp_path, split_line):
    path = corpus_files.write_jsonl_zst(
        tmp_path / "a.jsonl.zst", _DOCS, frames=3, split_line=split_line
    )
    with open(path, "rb") as f:
        data = f.read()
    frames = _frames(data)
    assert len(frames) == 3 and b"".join(frames) == _DOC_BYTES
    assert [frame.endswith(b"\n") for frame in frames] == [not split_line, not split_line, True]
    assert _read_zst(path) == _DOC_BYTES
    # Without read_across_frames a single read() stops at the end of the first frame.
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    assert reader.read(len(_DOC_BYTES) + 1) == frames[0]


def test_more_frames_than_lines_gives_valid_empty_frames(tmp_path):
    path = corpus_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS[:2], frames=4)
    with open(path, "rb") as f:
        assert [len(frame) > 0 for frame in _frames(f.read())] == [False, True, False, True]
    assert _read_zst(path) == b"".join(json.dumps(d).encode() + b"\n" for d in _DOCS[:2])


def test_split_line_needs_a_line_per_frame(tmp_path):
    with pytest.raises(ValueError, match="at least frames=4 lines"):
        corpus_files.write_jsonl_zst(tmp_path / "a.zst", _DOCS[:3], frames=4, split_line=True)
    with pytest.raises(ValueError, match="cannot cut"):
        corpus_files.write_jsonl_zst(tmp_path / "a.zst", ["a", ""], frames=2, split_line=True)


def test_skippable_prefix_is_skipped(tmp_path):
    path = corpus_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS, skippable_prefix=True)
    with open(path, "rb") as f:
        head = f.read(8)
    assert head[:4] == (0x184D2A50).to_bytes(4, "little")
    assert int.from_bytes(head[4:], "little") == len(corpus_files.SKIPPABLE_PAYLOAD)
    assert _read_zst(path) == _DOC_BYTES


def test_long_window_needs_max_window_size(tmp_path):
    path = corpus_files.write_jsonl_zst(tmp_path / "a.jsonl.zst", _DOCS, long_window=True)
    with open(path, "rb") as f:
        assert zstandard.get_frame_parameters(f.read(18)).window_size == 2**31
    with pytest.raises(zstandard.ZstdError, match="too much memory"):
        _read_zst(path)
    assert _read_zst(path, max_window_size=2**31) == _DOC_BYTES
