"""Compare-and-swap on local and mounted file systems, EFS and FUSE bucket mounts included:
``common.compare_and_swap``'s ``local`` backend (its docstring says how each primitive is made
atomic, with hard links and ``flock`` or, on a file system without hard links, ``O_EXCL``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import os
import posixpath
import re
import time
import uuid

from common import storage
from common.errors import PilepackError

# What link() (rename()) answers on a file system without them (FUSE: ENOSYS, EPERM for link).
_UNSUPPORTED = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EMLINK)
# A version lock is held for a read and a rename: one this old was left by a dead holder.
LEFTOVER_LOCK_S = 60.0
VERSION_LOCK_MARKER = ".lock-"  # <file>.lock-<hash of the version>, beside the file


class LeftoverLock(PilepackError):
    """A version lock file left behind by a process that died while changing the file."""


class UnsupportedFilesystem(PilepackError):
    """An output on a file system that can neither link nor rename files (mountpoint-s3)."""


@dataclasses.dataclass(frozen=True)
class Versioned:
    """A file's content as read, the version to pass back to replace/delete, its mtime."""

    data: bytes
    version: str  # opaque; compare only for equality
    modified: float  # seconds since the epoch: mtime, or the object's LastModified


class Local:
    """The primitives of ``common.compare_and_swap`` on a local or mounted path."""

    @staticmethod
    def create_exclusive(fs, path: str, data: bytes) -> bool:
        tmp = _write_tmp(path, data)
        try:
            os.link(tmp, path)  # atomic, fails if the name exists
            return True
        except FileExistsError:
            return False
        except OSError as err:
            if err.errno not in _UNSUPPORTED:
                raise
            tmp = _renamed(tmp)  # refuses a file system that cannot rename either
        finally:
            os.unlink(tmp)
        return _create_excl(path, data)

    @staticmethod
    def read(fs, path: str) -> Versioned | None:
        try:
            with open(path, "rb") as handle:
                return _local_versioned(handle)
        except FileNotFoundError:
            return None

    @staticmethod
    def replace_if(fs, path: str, data: bytes, version: str) -> bool:
        tmp = _write_tmp(path, data)
        try:
            with _locked(path, version) as held:
                if held:
                    os.replace(tmp, path)
                return held
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    @staticmethod
    def delete_if(fs, path: str, version: str) -> bool:
        with _locked(path, version) as held:
            if held:
                os.unlink(path)
            return held


def _local_versioned(handle) -> Versioned:
    # One descriptor for content and inode: the file is only ever replaced, never rewritten.
    stat = os.fstat(handle.fileno())
    data = handle.read()
    digest = hashlib.sha256(data).hexdigest()[:16]
    return Versioned(data=data, version=f"{stat.st_ino}:{stat.st_mtime_ns}:{digest}",
                     modified=stat.st_mtime)


def _write_tmp(path: str, data: bytes) -> str:
    directory = posixpath.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = posixpath.join(directory, f"{storage.TMP_MARKER}{uuid.uuid4().hex}-"
                                    f"{posixpath.basename(path)}")
    with open(tmp, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return tmp


def _renamed(tmp: str) -> str:
    """``tmp`` renamed (every write renames a complete file into place); UnsupportedFilesystem
    where the file system cannot (mountpoint-s3 on a general purpose bucket)."""
    moved = f"{tmp}-renamed"
    try:
        os.rename(tmp, moved)
    except OSError as err:
        if err.errno not in _UNSUPPORTED:
            raise
        raise UnsupportedFilesystem(
            f"{posixpath.dirname(tmp)} is on {_mount_of(tmp)}, which renames no files "
            f"({os.strerror(err.errno)}); pilepack writes every file whole and then renames it "
            "into place, so write to the bucket through its URL instead "
            "(--output=s3://BUCKET/PATH or gs://BUCKET/PATH)") from err
    return moved


def _mount_of(path: str) -> str:
    """``the TYPE mount MOUNTPOINT (SOURCE)`` holding ``path``, from /proc/self/mountinfo."""
    real, best = os.path.realpath(path), None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields, _, rest = line.partition(" - ")
                point = _unescape(fields.split()[4])
                if (real == point or real.startswith(point.rstrip("/") + "/")) and (
                        best is None or len(point) >= len(best[0])):
                    best = (point, *rest.split()[:2])
    except (OSError, IndexError):
        return "its mount"
    return f"the {best[1]} mount {best[0]} ({best[2]})" if best else "its mount"


def _unescape(field: str) -> str:
    # mountinfo writes a space, tab, newline and backslash in octal: \040 ...
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def _create_excl(path: str, data: bytes) -> bool:
    """Create ``path`` with ``O_EXCL`` and write ``data`` into it; False when it exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return True


def _has_hard_links(directory: str) -> bool:
    """Whether the file system of ``directory`` makes hard links (FUSE bucket mounts do not)."""
    # An empty file, not synced: only its name matters (a sync costs milliseconds per update).
    probe = posixpath.join(directory, f"{storage.TMP_MARKER}{uuid.uuid4().hex}-link-probe")
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        os.link(probe, f"{probe}-linked")
    except OSError as err:
        if err.errno in _UNSUPPORTED:
            return False
        raise
    finally:
        os.unlink(probe)
    os.unlink(f"{probe}-linked")
    return True


@contextlib.contextmanager
def _locked(path: str, version: str):
    """Yield True holding a lock on the file at ``path`` if it still has ``version``: ``flock``
    where the file system has hard links, else the version's lock file."""
    if not _has_hard_links(posixpath.dirname(path) or "."):
        with _version_locked(path, version) as held:
            yield held
        return
    with _flocked(path, version) as held:
        yield held


@contextlib.contextmanager
def _version_locked(path: str, version: str):
    """Yield True holding ``<path>.lock-<hash of version>`` (created with ``O_EXCL``) if the
    file at ``path`` still has ``version``. Whoever changes the file from a version holds that
    version's lock, so none can change it while a holder checks and then changes it."""
    lock = f"{path}{VERSION_LOCK_MARKER}{hashlib.sha256(version.encode()).hexdigest()[:16]}"
    try:
        os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        _refuse_leftover(lock)
        yield False  # another process is changing this version: it wins
        return
    try:
        current = Local.read(None, path)
        yield current is not None and current.version == version
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def _refuse_leftover(lock: str) -> None:
    try:
        age = time.time() - os.stat(lock).st_mtime
    except FileNotFoundError:  # its holder is done
        return
    if age > LEFTOVER_LOCK_S:
        raise LeftoverLock(
            f"{lock}: a lock file left {age / 60:.0f} minutes ago by a process that died while "
            "changing the file beside it (held only for a moment); remove it once no run of "
            "this output is starting or stopping, then rerun")


@contextlib.contextmanager
def _flocked(path: str, version: str):
    """Yield True holding ``flock`` on the file at ``path`` if it still has ``version``."""
    try:
        fd = os.open(path, os.O_RDWR)
    except PermissionError:  # another user's file: a shared lock still excludes theirs
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield False
        return
    with os.fdopen(fd, "rb") as handle:
        fcntl.flock(fd, fcntl.LOCK_EX)  # NFS (EFS): emulated with a POSIX lock
        try:
            still_there = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            still_there = False
        yield still_there and _local_versioned(handle).version == version
