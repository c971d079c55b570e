"""inputs.py: --input globs, directories and comma lists -> a sorted, indexed file list."""

import os
import uuid

import fsspec
import pytest

from common import storage
from common.errors import InputError
from pipeline.read.inputs import InputFile, expand_inputs


@pytest.fixture
def corpus(tmp_path):
    """data/{b.jsonl (3 B), a.jsonl.zst (5 B), notes.txt, sub/c.jsonl.gz (7 B), empty/}."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "empty").mkdir()
    (data / "b.jsonl").write_bytes(b"b" * 3)
    (data / "a.jsonl.zst").write_bytes(b"a" * 5)
    (data / "notes.txt").write_bytes(b"not an input")
    (data / "sub" / "c.jsonl.gz").write_bytes(b"c" * 7)
    return data


def _names(files: list[InputFile], root) -> list[str]:
    return [os.path.relpath(f.path, root) for f in files]


def test_a_file_keeps_the_path_as_given(corpus):
    path = str(corpus / "b.jsonl")
    (listed,) = expand_inputs(path)
    assert listed == InputFile(index=0, path=path, bytes=3, version=listed.version)
    assert listed.version.startswith("mtime=")  # what reading checks, with the size


def test_glob_lists_matches_sorted_and_indexed(corpus):
    files = expand_inputs(f"{corpus}/*.jsonl*")
    assert _names(files, corpus) == ["a.jsonl.zst", "b.jsonl"]
    assert [(f.index, f.bytes) for f in files] == [(0, 5), (1, 3)]


def test_glob_takes_any_suffix_the_user_names(corpus):
    assert _names(expand_inputs(f"{corpus}/*.txt"), corpus) == ["notes.txt"]


def test_directory_is_searched_recursively_for_known_suffixes(corpus):
    files = expand_inputs(str(corpus))
    assert _names(files, corpus) == ["a.jsonl.zst", "b.jsonl", "sub/c.jsonl.gz"]
    assert [(f.index, f.bytes) for f in files] == [(0, 5), (1, 3), (2, 7)]


def test_comma_list_is_sorted_deduplicated_and_ignores_blanks(corpus):
    b, c = str(corpus / "b.jsonl"), str(corpus / "sub" / "c.jsonl.gz")
    files = expand_inputs(f" {c} ,, {b},{c},")
    assert [(f.index, f.path, f.bytes) for f in files] == [(0, b, 3), (1, c, 7)]


def test_the_same_spec_always_gives_the_same_list(corpus):
    spec = f"{corpus}/sub,{corpus}/*.jsonl"
    assert expand_inputs(spec) == expand_inputs(spec)


@pytest.mark.parametrize("item,fragment", [
    ("missing.jsonl", "does not exist"),
    ("*.nothing", "matches no file"),
    ("empty", "holds no"),
])
def test_unusable_items_are_refused_by_name(corpus, item, fragment):
    bad = str(corpus / item)
    with pytest.raises(ValueError, match=fragment) as err:
        expand_inputs(f"{corpus / 'b.jsonl'},{bad}")
    assert repr(bad) in str(err.value)


def test_a_file_named_twice_in_different_forms_is_read_once(corpus, monkeypatch):
    monkeypatch.chdir(corpus)
    files = expand_inputs("b.jsonl,*.jsonl")
    assert len(files) == 1


@pytest.fixture
def memory_root():
    fs = fsspec.filesystem("memory")
    root = f"/inputs-{uuid.uuid4().hex}"
    fs.pipe({f"{root}/b.jsonl": b"bb", f"{root}/a.jsonl": b"a", f"{root}/x.txt": b"x"})
    yield root
    fs.rm(root, recursive=True)


@pytest.mark.parametrize("form", ["{root}/*.jsonl", "{root}", "{root}/b.jsonl,{root}/a.jsonl"])
def test_fsspec_urls_keep_their_scheme(memory_root, form):
    spec = ",".join("memory://" + part for part in form.format(root=memory_root).split(","))
    files = expand_inputs(spec)
    assert all(f.path.startswith("memory://") for f in files)
    stripped = [storage.filesystem(f.path)[1] for f in files]
    assert stripped == [f"{memory_root}/a.jsonl", f"{memory_root}/b.jsonl"]
    assert [(f.index, f.bytes) for f in files] == [(0, 1), (1, 2)]


def test_missing_fsspec_url_is_refused_by_name(memory_root):
    url = f"memory://{memory_root}/gone.jsonl"
    with pytest.raises(ValueError, match="does not exist") as err:
        expand_inputs(url)
    assert url in str(err.value)


def test_a_file_changed_or_removed_after_listing_stops_the_read(corpus):
    from pipeline.config import ReadConfig
    from pipeline.read.inputs import InputChangedError
    from pipeline.read.stage import read_file

    path = corpus / "b.jsonl"
    (listed,) = expand_inputs(str(path))
    path.write_bytes(b"{}\n{}\n")  # rewritten after the run listed it
    with pytest.raises(InputChangedError, match="changed after the run listed it .* rerun"):
        list(read_file(listed, config=ReadConfig()))
    os.remove(path)
    with pytest.raises(InputChangedError, match="disappeared"):
        list(read_file(listed, config=ReadConfig()))


@pytest.mark.parametrize("form", ["directory", "glob", "file"])
def test_a_symbolic_link_is_listed_as_its_target_and_read(tmp_path, form):
    # A listing describes the link itself (its own mtime); the check before reading, the
    # target: the two must agree, or every linked input reads as "changed after listing".
    from pipeline.config import ReadConfig
    from pipeline.read.stage import read_file

    target = tmp_path / "real" / "a.jsonl"
    target.parent.mkdir()
    target.write_bytes(b'{"text": "x", "meta": {"pile_set_name": "A"}}\n')
    os.utime(target, (1_577_836_800, 1_577_836_800))  # older than the link
    links = tmp_path / "links"
    links.mkdir()
    (links / "a.jsonl").symlink_to(target)
    spec = {"directory": links, "glob": links / "*.jsonl", "file": links / "a.jsonl"}[form]
    (listed,) = expand_inputs(str(spec))
    assert listed.bytes == target.stat().st_size
    assert listed.version == "mtime=1577836800.0"
    assert len(list(read_file(listed, config=ReadConfig()))) >= 1


def test_a_dangling_symbolic_link_is_refused_by_name(tmp_path):
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(InputError, match="symbolic link to a missing file"):
        expand_inputs(str(tmp_path / "*.jsonl"))


def test_a_file_changed_while_it_is_read_stops_the_read(tmp_path):
    import time

    from datagen.pile_files import pile_doc, write_jsonl_zst
    from pipeline.config import ReadConfig
    from pipeline.read.inputs import InputChangedError
    from pipeline.read.stage import read_file

    path = tmp_path / "in.jsonl.zst"
    write_jsonl_zst(path, [pile_doc("word " * 400) for _ in range(20)])
    (listed,) = expand_inputs(str(path))
    items = read_file(listed, config=ReadConfig(chunk_bytes=1024))
    next(items)  # the first chunk is out
    time.sleep(0.01)
    with open(path, "ab") as handle:  # another writer appends meanwhile
        handle.write(b"\0")
    with pytest.raises(InputChangedError, match="changed while the run read it"):
        list(items)
