"""Compare-and-swap on one small file: create it exclusively, read it with a version, replace or
delete it only if it still has the version read.

What makes it atomic depends on the storage, so each protocol has its own class with the same
four static methods, registered in ``BACKENDS`` (to add one, e.g. ``az``: write the class and
register its protocol names):

- ``local`` (local and mounted file systems, EFS included; in ``common.local_swap``): creation
  is ``os.link`` of a complete temporary file (never a partial file under the final name);
  replace and delete take ``flock`` on the current file, check that it is still the file at the
  path and still has the version read, then ``os.replace``/``unlink``. ``flock`` is released when its holder dies, so a
  crash leaves no lock behind. The version is inode, mtime and a hash of the content.
  A file system without hard links (FUSE bucket mounts: gcsfuse, mountpoint-s3, Vertex AI's
  ``/gcs/``), where ``flock`` is at best local to one machine: creation is ``open`` with
  ``O_EXCL`` (the content is written after, so a reader may see it partial for a moment), and
  replace and delete first create a lock file named after the version they replace, with
  ``O_EXCL``: of those who read one version, one changes it. A holder that dies in between
  leaves its lock file (``LeftoverLock`` names it once it is ``LEFTOVER_LOCK_S`` old). One
  that renames no files either (mountpoint-s3) is refused: ``local_swap.UnsupportedFilesystem``.
- ``s3``: conditional requests: ``PUT`` with ``If-None-Match: *`` (create) or
  ``If-Match: <ETag>`` (replace), ``DELETE`` with ``If-Match``. The version is the ETag.
- ``gs``: generation preconditions through the ``google-cloud-storage`` client (it comes with
  the ``dataflow`` extra, as gcsfs does): upload with ``ifGenerationMatch=0`` (create) or
  ``=<generation>`` (replace), delete with ``ifGenerationMatch``. The version is the generation.
- any other protocol (fsspec's memory file system): read-compare-write, *not* atomic;
  ``is_atomic`` says whether a path's storage is.

A bucket that does not exist raises ``storage.BucketNotFound`` at once (not a lost race); a store
that refuses this process (no credentials, 403) raises ``storage.StorageAccessDenied``, one still
throttling after the client's retries ``storage.StorageThrottled``: each names the path and the fix.

A conditional write whose response was lost may have happened: its retry then fails the
precondition. So a failed create or replace reads the file back, and content equal to what was
written counts as success (callers write content unique to themselves, e.g. a random run id).
"""

from __future__ import annotations

import hashlib

from common import storage
from common.local_swap import LEFTOVER_LOCK_S, LeftoverLock, Local, Versioned

__all__ = ["BACKENDS", "LEFTOVER_LOCK_S", "LeftoverLock", "Versioned", "create_exclusive",
           "delete_if", "is_atomic", "read", "replace_if"]


def create_exclusive(path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data``; False when it already exists."""
    fs, stripped = storage.filesystem(path)
    return _backend(fs).create_exclusive(fs, stripped, data) or _is(fs, stripped, data)


def read(path: str) -> Versioned | None:
    """The file with its version, or None when there is none."""
    fs, stripped = storage.filesystem(path)
    return _backend(fs).read(fs, stripped)


def replace_if(path: str, data: bytes, *, version: str) -> bool:
    """Replace ``path`` with ``data`` if it still has ``version``; False otherwise."""
    fs, stripped = storage.filesystem(path)
    return _backend(fs).replace_if(fs, stripped, data, version) or _is(fs, stripped, data)


def delete_if(path: str, *, version: str) -> bool:
    """Delete ``path`` if it still has ``version``; False otherwise (changed, or gone)."""
    fs, stripped = storage.filesystem(path)
    return _backend(fs).delete_if(fs, stripped, version)


def is_atomic(path: str) -> bool:
    """Whether the primitives are atomic on ``path``'s storage (see the module docstring)."""
    fs, _ = storage.filesystem(path)
    return _backend(fs) is not _Unconditional


def _is(fs, path: str, data: bytes) -> bool:
    current = _backend(fs).read(fs, path)
    return current is not None and current.data == data



class _S3:
    @staticmethod
    def create_exclusive(fs, path: str, data: bytes) -> bool:
        return _s3_conditional(fs, path, "put_object", Body=data, IfNoneMatch="*")

    @staticmethod
    def read(fs, path: str) -> Versioned | None:
        from fsspec.asyn import sync

        bucket, key, _ = fs.split_path(path)
        try:
            with _s3_access(path):
                response, data = sync(fs.loop, _s3_get, fs, bucket, key)
        except FileNotFoundError as err:
            _refuse_missing_s3_bucket(err, path)
            return None
        return Versioned(data=data, version=response["ETag"],
                         modified=response["LastModified"].timestamp())

    @staticmethod
    def replace_if(fs, path: str, data: bytes, version: str) -> bool:
        return _s3_conditional(fs, path, "put_object", Body=data, IfMatch=version)

    @staticmethod
    def delete_if(fs, path: str, version: str) -> bool:
        return _s3_conditional(fs, path, "delete_object", IfMatch=version)


async def _s3_get(fs, bucket: str, key: str):
    # One GET: the ETag and the content of the same version (s3fs's info/cat could differ).
    response = await fs._call_s3("get_object", Bucket=bucket, Key=key)
    async with response["Body"] as body:
        return response, await body.read()


# The codes of a failed precondition: 412, and 409 for a conflicting concurrent write.
_S3_LOST = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def _refuse_missing_s3_bucket(err: FileNotFoundError, path: str) -> None:
    # s3fs turns a missing key and a missing bucket alike into FileNotFoundError.
    if storage.s3_error_code(err) == "NoSuchBucket":
        raise _bucket_not_found(f"s3://{path}") from err


def _s3_conditional(fs, path: str, method: str, **kwargs) -> bool:
    bucket, key, _ = fs.split_path(path)
    try:
        with _s3_access(path):
            fs.call_s3(method, Bucket=bucket, Key=key, **kwargs)
    except FileNotFoundError as err:  # If-Match on a key that is gone
        _refuse_missing_s3_bucket(err, path)
        return False
    except OSError as err:
        code = storage.s3_error_code(err)
        if isinstance(err, FileExistsError) or code in _S3_LOST:
            return False
        raise
    finally:
        fs.invalidate_cache(path)
    return True


def _s3_access(path: str):
    """Within: S3's refusals (403, throttling past the client's retries) are one typed error
    naming ``path`` and the fix (``storage.store_error``), as ``_gcs_access`` makes GCS's."""
    return storage.store_errors(f"s3://{path}")


class _GCS:
    @staticmethod
    def create_exclusive(fs, path: str, data: bytes) -> bool:
        from google.api_core import exceptions

        try:
            return _gcs_conditional(lambda blob: blob.upload_from_string(
                data, content_type="application/octet-stream", if_generation_match=0),
                fs, path, gone_is_lost=False)
        except exceptions.NotFound as err:  # no object is what this write expects: no bucket
            raise _bucket_not_found(f"gs://{path}") from err

    @staticmethod
    def read(fs, path: str) -> Versioned | None:
        from google.api_core import exceptions

        for _ in range(5):
            with _gcs_access(path):
                blob = _gcs_blob(fs, path)
                blob = blob.bucket.get_blob(blob.name)  # metadata: generation, time
            if blob is None:
                return None
            try:  # the content of the generation whose metadata was read, or read again
                with _gcs_access(path):
                    data = blob.download_as_bytes(if_generation_match=blob.generation)
            except (exceptions.PreconditionFailed, exceptions.NotFound):
                continue
            return Versioned(data=data, version=str(blob.generation),
                             modified=blob.updated.timestamp() if blob.updated else 0.0)
        raise OSError(f"{path} keeps changing while it is read")

    @staticmethod
    def replace_if(fs, path: str, data: bytes, version: str) -> bool:
        return _gcs_conditional(lambda blob: blob.upload_from_string(
            data, content_type="application/octet-stream", if_generation_match=int(version)),
            fs, path)

    @staticmethod
    def delete_if(fs, path: str, version: str) -> bool:
        return _gcs_conditional(lambda blob: blob.delete(if_generation_match=int(version)),
                                fs, path)


def _gcs_blob(fs, path: str):
    # Credentials from Google's standard chain, as gcsfs's default; STORAGE_EMULATOR_HOST too.
    from google.cloud import storage as gcs

    bucket, key, _ = fs.split_path(path)
    return gcs.Client(project=None).bucket(bucket).blob(key)


def _gcs_conditional(request, fs, path: str, *, gone_is_lost: bool = True) -> bool:
    from google.api_core import exceptions

    lost = (exceptions.PreconditionFailed, exceptions.Conflict,
            *((exceptions.NotFound,) if gone_is_lost else ()))
    try:
        with _gcs_access(path):
            request(_gcs_blob(fs, path))
    except lost:
        return False  # 412: another generation; 404: gone; 409: a concurrent conflicting write
    finally:
        fs.invalidate_cache(path)  # gcsfs's listings must see the change
    return True


def _gcs_access(path: str):
    """Within: the google-cloud-storage client's refusals (no credentials, 401, 403, 429 past
    its retries) are one typed error naming ``path`` and the fix (``storage.store_error``);
    its own exceptions are neither ours nor OSError."""
    return storage.store_errors(f"gs://{path}")


def _bucket_not_found(url: str) -> storage.BucketNotFound:
    return storage.bucket_not_found(url)


class _Unconditional:
    """Read, compare, write: a window between them (no conditional writes here)."""

    @staticmethod
    def create_exclusive(fs, path: str, data: bytes) -> bool:
        if fs.exists(path):
            return False
        fs.pipe_file(path, data)
        return True

    @staticmethod
    def read(fs, path: str) -> Versioned | None:
        try:
            data = fs.cat_file(path)
        except FileNotFoundError:
            return None
        return Versioned(data=data, version=hashlib.sha256(data).hexdigest(),
                         modified=_modified(fs.info(path)))

    @staticmethod
    def replace_if(fs, path: str, data: bytes, version: str) -> bool:
        current = _Unconditional.read(fs, path)
        if current is None or current.version != version:
            return False
        fs.pipe_file(path, data)
        return True

    @staticmethod
    def delete_if(fs, path: str, version: str) -> bool:
        current = _Unconditional.read(fs, path)
        if current is None or current.version != version:
            return False
        fs.rm_file(path)
        return True


def _modified(info: dict) -> float:
    """An fsspec info's modification time; 0 (as old as can be) when it has none."""
    for key in ("mtime", "LastModified", "created"):
        stamp = info.get(key)
        if hasattr(stamp, "timestamp"):
            return stamp.timestamp()
        if isinstance(stamp, (int, float)) and stamp:
            return float(stamp)
    return 0.0


BACKENDS = {"file": Local, "local": Local, "s3": _S3, "s3a": _S3, "gs": _GCS, "gcs": _GCS}


def _backend(fs):
    return BACKENDS.get(storage.protocol(fs), _Unconditional)
