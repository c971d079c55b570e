"""storage.py: URL-aware join/dirname, and atomic_open leaving no partial file behind."""

import uuid

import fsspec
import pytest

from common import storage


class Boom(Exception):
    pass


@pytest.mark.parametrize("base,parts,joined", [
    ("/data/out", ("a", "b.json"), "/data/out/a/b.json"),
    ("out/", ("x",), "out/x"),
    ("s3://bucket/prefix", ("dead_letters", "t-00000.jsonl"),
     "s3://bucket/prefix/dead_letters/t-00000.jsonl"),
    ("memory://root/", ("m.json",), "memory://root/m.json"),
])
def test_join(base, parts, joined):
    assert storage.join(base, *parts) == joined


@pytest.mark.parametrize("path,parent", [
    ("/data/out/manifest.json", "/data/out"),
    ("manifest.json", ""),
    ("s3://bucket/prefix/manifest.json", "s3://bucket/prefix"),
    ("memory://root/m.json", "memory://root"),
])
def test_dirname(path, parent):
    assert storage.dirname(path) == parent


def test_filesystem_and_object_store(tmp_path):
    local, stripped = storage.filesystem(str(tmp_path / "a.json"))
    assert stripped == str(tmp_path / "a.json") and not storage.is_object_store(local)
    memory, stripped = storage.filesystem("memory://root/a.json")
    assert stripped == "/root/a.json" and storage.is_object_store(memory)


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_local_file_appears_only_when_complete(tmp_path):
    target = tmp_path / "new" / "dir" / "data.bin"
    with storage.atomic_open(str(target)) as handle:
        handle.write(b"part 1,")
        assert not target.exists()
        (tmp,) = _files(tmp_path)
        assert tmp.rsplit("/", 1)[1].startswith(storage.TMP_MARKER)
        handle.write(b" part 2")
    assert target.read_bytes() == b"part 1, part 2"
    assert _files(tmp_path) == ["new/dir/data.bin"]


def test_local_text_mode(tmp_path):
    with storage.atomic_open(str(tmp_path / "a.txt"), "w") as handle:
        handle.write("héllo")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"


def test_local_error_leaves_nothing(tmp_path):
    with pytest.raises(Boom), storage.atomic_open(str(tmp_path / "data.bin")) as handle:
        handle.write(b"partial")
        raise Boom()
    assert _files(tmp_path) == []


def test_local_error_keeps_the_previous_file(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    with pytest.raises(Boom), storage.atomic_open(str(target)) as handle:
        handle.write(b"new but partial")
        raise Boom()
    assert target.read_bytes() == b"old" and _files(tmp_path) == ["data.bin"]
    with storage.atomic_open(str(target)) as handle:
        handle.write(b"new")
    assert target.read_bytes() == b"new"


@pytest.fixture
def memory_url():
    fs = fsspec.filesystem("memory")
    root = f"/storage-{uuid.uuid4().hex}"
    yield fs, f"memory://{root}/data.bin"
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_memory_object_is_complete_after_success(memory_url):
    fs, url = memory_url
    with storage.atomic_open(url) as handle:
        handle.write(b"all of it")
    assert fs.cat(storage.filesystem(url)[1]) == b"all of it"


def test_memory_error_leaves_no_object(memory_url):
    fs, url = memory_url
    with pytest.raises(Boom), storage.atomic_open(url) as handle:
        handle.write(b"partial")
        raise Boom()
    assert not fs.exists(storage.filesystem(url)[1])


def _refuse():
    raise Boom()


def test_a_refusing_before_commit_keeps_the_previous_local_file(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")
    calls = []
    with storage.atomic_open(str(target), before_commit=lambda: calls.append(target.exists())) \
            as handle:
        handle.write(b"new")
    assert calls == [True] and target.read_bytes() == b"new"  # called once, before the rename
    with pytest.raises(Boom), storage.atomic_open(str(target), before_commit=_refuse) as handle:
        handle.write(b"complete, but refused")
    assert target.read_bytes() == b"new" and _files(tmp_path) == ["data.bin"]


def test_a_refusing_before_commit_leaves_no_object(memory_url):
    fs, url = memory_url
    with pytest.raises(Boom), storage.atomic_open(url, before_commit=_refuse) as handle:
        handle.write(b"complete, but refused")
    assert not fs.exists(storage.filesystem(url)[1])


def test_store_error_names_the_path_and_the_fix_for_each_refusal():
    from gcsfs.retry import HttpError

    gs = "gs://b/data/manifest.json"
    throttled = storage.store_error(gs, HttpError({"code": 429, "message": "rate"}))
    assert isinstance(throttled, storage.StorageThrottled)
    assert str(throttled).startswith(f"{gs}: Cloud Storage kept answering 429")
    denied = storage.store_error(gs, OSError("Forbidden: b/o\ncaller does not have access"))
    assert isinstance(denied, storage.StorageAccessDenied)
    assert "access denied (caller does not have access)" in str(denied)
    assert "gs://b (e.g. roles/storage.objectAdmin)" in str(denied)
    # Not a refusal, or not an object store: left to the caller.
    assert storage.store_error(gs, FileNotFoundError("b/o")) is None
    assert storage.store_error(gs, HttpError({"code": 400, "message": "bad"})) is None
    assert storage.store_error("/local/manifest.json", PermissionError("denied")) is None
    with pytest.raises(storage.StorageThrottled, match="retry later"), storage.store_errors(gs):
        raise HttpError({"code": 503, "message": "backend"})
    with pytest.raises(KeyError), storage.store_errors(gs):  # anything else: unchanged
        raise KeyError("x")
