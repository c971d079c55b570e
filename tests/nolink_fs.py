"""A real file system without hard links, as FUSE bucket mounts are (gcsfuse, mountpoint-s3,
Vertex AI's ``/gcs/``): a FUSE passthrough (fusepy over libfuse 2) of a backing directory whose
``link()`` fails with ``ENOSYS``, what a FUSE server without the operation answers.

Run as ``python -m tests.nolink_fs BACKING MOUNTPOINT [--no-rename]`` (it stays in the foreground until
unmounted); ``mounted()`` mounts one for a test and unmounts it after. Mounting needs
``/dev/fuse``, root (or ``fusermount``) and libfuse 2 (Debian's ``libfuse2``, which ``.ci/run``
installs); ``cannot_mount()`` says why when that is missing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import time


class NoLinkPassthrough:
    """fusepy operations: every call goes to the same path under ``backing``, but ``link``
    (and ``rename`` unless ``renames``)."""

    def __init__(self, backing: str, *, renames: bool = True):
        self.backing, self.renames = backing, renames

    def __call__(self, op, *args):  # fusepy's dispatch
        from fuse import FuseOSError

        if not hasattr(self, op):
            raise FuseOSError(errno.ENOSYS)
        return getattr(self, op)(*args)

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def link(self, target, source):
        from fuse import FuseOSError

        raise FuseOSError(errno.ENOSYS)

    def getattr(self, path, fh=None):
        st = os.lstat(self._real(path))
        return {key: getattr(st, key) for key in (
            "st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_atime", "st_mtime",
            "st_ctime", "st_ino")}

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._real(path))]

    def access(self, path, mode):
        if not os.access(self._real(path), mode):
            from fuse import FuseOSError

            raise FuseOSError(errno.EACCES)

    def open(self, path, flags):
        return os.open(self._real(path), flags)

    def create(self, path, mode, fi=None):
        # O_EXCL: the kernel passes it on, and the backing file system honours it.
        return os.open(self._real(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        os.truncate(self._real(path) if fh is None else fh, length)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        os.fsync(fh)

    def release(self, path, fh):
        os.close(fh)

    def unlink(self, path):
        os.unlink(self._real(path))

    def rename(self, old, new):
        if not self.renames:  # as mountpoint-s3 on a general purpose bucket
            from fuse import FuseOSError

            raise FuseOSError(errno.ENOSYS)
        os.rename(self._real(old), self._real(new))

    def mkdir(self, path, mode):
        os.mkdir(self._real(path), mode)

    def rmdir(self, path):
        os.rmdir(self._real(path))

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._real(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._real(path), times)

    def statfs(self, path):
        st = os.statvfs(self._real(path))
        return {key: getattr(st, key) for key in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}


def cannot_mount() -> str:
    """Why this machine cannot mount the file system ("" when it can)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (a container started without --device /dev/fuse)"
    try:
        import fuse  # noqa: F401  (fusepy: loads libfuse.so.2 on import)
    except (ImportError, OSError) as err:
        return f"fusepy cannot load libfuse 2 ({err}): apt-get install libfuse2"
    if os.geteuid() != 0 and not _on_path("fusermount"):
        return "not root and no fusermount to mount FUSE file systems with"
    return ""


def _on_path(name: str) -> bool:
    return any(os.access(os.path.join(d, name), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))


@contextlib.contextmanager
def mounted(backing: str, mountpoint: str, *, renames: bool = True):
    """Mount the file system of ``backing`` on ``mountpoint`` in a child process (one that
    cannot rename files either unless ``renames``); unmount after. Raises RuntimeError with
    the child's output when it does not come up."""
    os.makedirs(backing, exist_ok=True)
    os.makedirs(mountpoint, exist_ok=True)
    log = f"{backing.rstrip('/')}.log"  # a file, not a pipe that could fill and block it
    with open(log, "wb") as output:
        server = subprocess.Popen([sys.executable, "-m", "tests.nolink_fs", backing, mountpoint,
                                   *([] if renames else ["--no-rename"])],
                                  stdout=output, stderr=subprocess.STDOUT,
                                  cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mountpoint):
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                server.wait()
                with open(log, errors="replace") as output:
                    raise RuntimeError(f"the FUSE file system did not mount on {mountpoint}: "
                                       f"{output.read()}")
            time.sleep(0.05)
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", mountpoint], check=False, capture_output=True)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main(argv: list[str]) -> None:
    from fuse import FUSE

    backing, mountpoint = argv[:2]
    operations = NoLinkPassthrough(os.path.abspath(backing), renames="--no-rename" not in argv)
    # Threads: a claim's reader and writer may be in separate processes at once.
    FUSE(operations, mountpoint, foreground=True,
         nothreads=False, allow_other=True, default_permissions=True)


if __name__ == "__main__":
    main(sys.argv[1:])
