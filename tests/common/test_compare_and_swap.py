"""common/compare_and_swap.py: create-exclusive, read-with-version, replace-if-version and
delete-if-version, locally, on a real file system without hard links (FUSE, as bucket mounts
are), on S3 (moto's server) and on fsspec's memory file system."""

import hashlib
import multiprocessing
import os
import time
import uuid

import pytest

from common import compare_and_swap


@pytest.fixture(params=["local", "nolink", "s3", "memory"])
def path(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "dir" / "claim.json")
    if request.param == "nolink":
        return str(request.getfixturevalue("nolink_dir") / uuid.uuid4().hex / "claim.json")
    if request.param == "s3":
        s3 = request.getfixturevalue("s3")
        return s3.url("dir/claim.json")
    return f"memory://conditional-{uuid.uuid4().hex}/claim.json"


def test_each_primitive_succeeds_only_on_the_version_it_names(path):
    assert compare_and_swap.read(path) is None
    assert compare_and_swap.create_exclusive(path, b"first")
    assert not compare_and_swap.create_exclusive(path, b"second")
    first = compare_and_swap.read(path)
    assert first.data == b"first" and first.modified > 0
    assert compare_and_swap.replace_if(path, b"third", version=first.version)
    assert not compare_and_swap.replace_if(path, b"fourth", version=first.version)  # stale version
    assert not compare_and_swap.delete_if(path, version=first.version)
    third = compare_and_swap.read(path)
    assert third.data == b"third" and third.version != first.version
    assert compare_and_swap.delete_if(path, version=third.version)
    assert compare_and_swap.read(path) is None
    assert not compare_and_swap.delete_if(path, version=third.version)  # gone
    assert not compare_and_swap.replace_if(path, b"fifth", version=third.version)


def test_a_write_whose_answer_was_lost_counts_if_the_content_is_ours(path):
    # A retried conditional PUT fails its precondition after the first one succeeded.
    assert compare_and_swap.create_exclusive(path, b"mine, unique")
    assert compare_and_swap.create_exclusive(path, b"mine, unique")
    assert not compare_and_swap.create_exclusive(path, b"someone else's")


def test_which_storages_are_atomic(tmp_path, s3):
    assert compare_and_swap.is_atomic(str(tmp_path / "x"))
    assert compare_and_swap.is_atomic(s3.url("x"))
    assert not compare_and_swap.is_atomic("memory://x")


def test_local_versions_differ_for_a_recreated_file_with_the_same_inode(tmp_path):
    path = str(tmp_path / "claim.json")
    compare_and_swap.create_exclusive(path, b"a")
    old = compare_and_swap.read(path)
    assert compare_and_swap.delete_if(path, version=old.version)
    compare_and_swap.create_exclusive(path, b"b")
    assert compare_and_swap.read(path).version != old.version
    assert not compare_and_swap.replace_if(path, b"c", version=old.version)


def test_local_primitives_leave_no_temporary_files(tmp_path):
    path = str(tmp_path / "claim.json")
    compare_and_swap.create_exclusive(path, b"a")
    compare_and_swap.create_exclusive(path, b"b")
    compare_and_swap.replace_if(path, b"c", version="stale")
    compare_and_swap.replace_if(path, b"d", version=compare_and_swap.read(path).version)
    assert os.listdir(tmp_path) == ["claim.json"]


def _replace_from(path: str, data: bytes, version: str) -> bool:
    return compare_and_swap.replace_if(path, data, version=version)


def test_without_hard_links_one_of_the_processes_racing_on_a_version_wins(nolink_dir):
    """Eight processes replace the version they all read: one wins, the file is its; then one
    delete of the new version wins over a stale replace."""
    path = str(nolink_dir / uuid.uuid4().hex / "claim.json")
    assert compare_and_swap.create_exclusive(path, b"first")
    first = compare_and_swap.read(path)
    context = multiprocessing.get_context("spawn")
    for attempt in range(3):  # several rounds: a lucky order wins once, not three times
        with context.Pool(8) as pool:
            wins = pool.starmap(_replace_from, [(path, f"{attempt}-{i}".encode(), first.version)
                                                for i in range(8)])
        current = compare_and_swap.read(path)
        assert sum(wins) == 1, wins
        assert current.data == f"{attempt}-{wins.index(True)}".encode()
        first = current
    assert compare_and_swap.delete_if(path, version=current.version)
    assert not compare_and_swap.replace_if(path, b"late", version=current.version)
    assert os.listdir(os.path.dirname(path)) == []  # no lock or temporary file left


def test_without_hard_links_a_leftover_version_lock_is_named(nolink_dir):
    path = str(nolink_dir / uuid.uuid4().hex / "claim.json")
    compare_and_swap.create_exclusive(path, b"a")
    version = compare_and_swap.read(path).version
    lock = f"{path}.lock-{hashlib.sha256(version.encode()).hexdigest()[:16]}"
    open(lock, "xb").close()  # as a holder that died between its lock and its rename leaves it
    assert not compare_and_swap.replace_if(path, b"b", version=version)  # young: a live holder
    old = time.time() - compare_and_swap.LEFTOVER_LOCK_S - 60
    os.utime(lock, (old, old))
    with pytest.raises(compare_and_swap.LeftoverLock, match=r"claim\.json\.lock-.*remove it"):
        compare_and_swap.delete_if(path, version=version)
    os.unlink(lock)
    assert compare_and_swap.delete_if(path, version=version)
