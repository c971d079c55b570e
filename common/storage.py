"""Paths and atomic writes for local, EFS/mounted, ``s3://`` and ``gs://`` locations (fsspec).

S3 endpoints and credentials come from the standard AWS chain (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, profiles, instance roles); GCS ones (gcsfs, in the ``dataflow`` extra)
from Google's (application default credentials, ``STORAGE_EMULATOR_HOST``); nothing here reads
or logs them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import shutil
import uuid

import fsspec

from common.errors import PilepackError

# Leftovers of a killed run carry this marker; readers ignore them and a rerun deletes them.
TMP_MARKER = ".inprogress-"


# What brings a URL scheme's file system where an install lacks it (often a Beam worker's: a
# --setup_file or requirements file without it): an extra, or pilepack's own dependencies.
INSTALL_FOR_SCHEME = {
    "gs": "pip install 'pilepack[dataflow]'", "gcs": "pip install 'pilepack[dataflow]'",
    "s3": "pip install pilepack (s3fs is one of its dependencies)",
    "s3a": "pip install pilepack (s3fs is one of its dependencies)",
}


def filesystem(path: str):
    """(fsspec filesystem, path without protocol) for a local path or a URL."""
    try:
        fs, stripped = fsspec.core.url_to_fs(path)
    except ImportError as err:  # fsspec's "Install gcsfs to access Google Storage"
        scheme = path.split("://", 1)[0] if "://" in path else ""
        install = INSTALL_FOR_SCHEME.get(scheme)
        fix = f" ({install} brings it, on the launcher and the Beam workers)" if install else ""
        raise MissingFilesystemError(f"{path}: {err}{fix}") from err
    return fs, stripped


class MissingFilesystemError(PilepackError, ImportError):
    """A URL whose scheme needs a file system package that is not installed."""


class BucketNotFound(PilepackError):
    """An object-store path whose bucket does not exist (often a typo in the URL)."""


class StorageAccessDenied(PilepackError):
    """An object store that refuses this process: no credentials, or no permission."""


# 403s of credentials that S3 does not accept, as against ones it accepts but does not allow.
_S3_BAD_CREDENTIALS = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                       "InvalidToken", "TokenRefreshRequired")


def s3_error_code(err: OSError) -> str | None:
    """The S3 error code behind s3fs's OSError (it keeps botocore's error as the cause)."""
    return getattr(err.__cause__, "response", {}).get("Error", {}).get("Code")


def s3_access_denied(url: str, err: PermissionError) -> StorageAccessDenied:
    """The one-line error for S3's 403 on ``url`` (s3fs raises PermissionError), naming the
    fix: other credentials, or a policy that allows them."""
    code = s3_error_code(err) or "403"
    message = str(err).strip().split("\n", 1)[0][:200]
    why = code if message in ("", code) else f"{code}: {message}"
    if code in _S3_BAD_CREDENTIALS:
        return StorageAccessDenied(
            f"{url}: the AWS credentials were refused ({why}); renew them, or check "
            "AWS_PROFILE / AWS_ACCESS_KEY_ID and AWS_ENDPOINT_URL")
    if code == "403":  # a HEAD's 403 has no body: refused credentials look the same
        return StorageAccessDenied(
            f"{url}: access denied ({why}; a HEAD request's answer gives no reason); check the "
            "credentials (AWS_PROFILE / AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL), and allow this "
            f"identity s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket on "
            f"{bucket_url(url)} (its IAM policy or the bucket policy)")
    return StorageAccessDenied(
        f"{url}: access denied ({why}); allow this identity s3:GetObject, s3:PutObject, "
        f"s3:DeleteObject and s3:ListBucket on {bucket_url(url)} (its IAM policy or the bucket "
        "policy), or choose another location")


class StorageThrottled(PilepackError):
    """An object store that still answers "too many requests" after the client's own retries."""


# S3's codes for "too many requests" (s3fs and botocore have retried them by the time we see one).
_S3_THROTTLED = ("SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                 "TooManyRequests", "RequestThrottled", "ServiceUnavailable", "503")
_THROTTLE_FIX = ("retry later, or spread the load: fewer Beam workers (--max_num_workers, "
                 "--direct_num_workers) or fewer concurrent requests")


def bucket_not_found(url: str) -> BucketNotFound:
    """The one-line error for a path whose bucket does not exist."""
    return BucketNotFound(
        f"{url}: the bucket {bucket_url(url)} does not exist; check its name for a typo, or "
        "create it first")


def refuse_missing_bucket(fs, url: str) -> None:
    """Raise ``bucket_not_found`` when ``url`` is on S3 or GCS and its bucket does not exist:
    for a path that is not there, the typo to point at rather than the missing file."""
    if protocol(fs) in ("s3", "s3a", "gs", "gcs") and "://" in url \
            and not fs.exists(bucket_url(url).split("://", 1)[1]):
        raise bucket_not_found(url)


def store_error(url: str, err: BaseException) -> PilepackError | None:
    """The one-line error naming ``url`` and the fix for an object store's refusal of a request
    on it (s3fs's, gcsfs's or the google-cloud-storage client's exception ``err``): no or bad
    credentials, access denied, or throttling that outlasted the client's retries. None for
    anything else (a missing object, a bug), which the caller handles or re-raises."""
    if isinstance(err, PilepackError):
        return err
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme in ("s3", "s3a"):
        return _s3_error(url, err)
    if scheme in ("gs", "gcs"):
        return _gcs_error(url, err)
    return None


def _s3_error(url: str, err: BaseException) -> PilepackError | None:
    if isinstance(err, PermissionError):
        return s3_access_denied(url, err)
    if not isinstance(err, OSError):
        return None
    code = s3_error_code(err)
    if code == "NoSuchBucket":
        return bucket_not_found(url)
    if code in _S3_THROTTLED:
        return StorageThrottled(
            f"{url}: S3 kept answering {code} (too many requests) after the client's retries; "
            f"{_THROTTLE_FIX}; a prefix sustains about 3,500 writes and 5,500 reads a second, "
            "so more prefixes or a raised service quota take more")
    return None


def _gcs_error(url: str, err: BaseException) -> PilepackError | None:
    status = getattr(err, "code", None)  # gcsfs's HttpError and google.api_core's errors
    kind = type(err).__name__
    line = _first_line(err)
    if kind == "DefaultCredentialsError":
        return StorageAccessDenied(
            f"{url}: no Google Cloud credentials ({line}); run `gcloud auth "
            "application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a key file "
            "that exists")
    if kind in ("RefreshError", "Unauthorized") or status == 401:
        return StorageAccessDenied(
            f"{url}: the Google Cloud credentials were refused ({line}); renew them "
            "(`gcloud auth application-default login`) or check GOOGLE_APPLICATION_CREDENTIALS")
    # gcsfs raises a plain OSError("Forbidden: <path>\n<message>") for a 403.
    if kind == "Forbidden" or status == 403 or (
            type(err) is OSError and str(err).startswith("Forbidden: ")):
        why = str(err).split("\n", 1)[-1].strip()[:200] if type(err) is OSError else line
        return StorageAccessDenied(
            f"{url}: access denied ({why}); grant this account read and write access to "
            f"{bucket_url(url)} (e.g. roles/storage.objectAdmin), or choose another location")
    if kind == "TooManyRequests" or status in (429, 503):
        return StorageThrottled(
            f"{url}: Cloud Storage kept answering {status} (too many requests) after the "
            f"client's retries; {_THROTTLE_FIX}; ramp up a bucket's request rate gradually, or "
            "ask for a higher quota")
    return None


def _first_line(err: BaseException) -> str:
    return str(err).strip().split("\n", 1)[0][:200]


@contextlib.contextmanager
def store_errors(url: str):
    """Within: an object store's refusal of a request (``store_error``) is raised as one typed
    error naming ``url`` and the fix; anything else propagates unchanged."""
    try:
        yield
    except Exception as err:
        found = store_error(url, err)
        if found is None or found is err:
            raise
        raise found from err


def bucket_url(path: str) -> str:
    """``scheme://bucket`` of an object-store URL (``gs://b/train`` -> ``gs://b``)."""
    scheme, rest = path.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def protocol(fs) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def is_object_store(fs) -> bool:
    return protocol(fs) in ("s3", "s3a", "gs", "gcs", "az", "abfs", "memory")


def is_local(fs) -> bool:
    return protocol(fs) in ("file", "local")


def join(base: str, *parts: str) -> str:
    if "://" in base:
        scheme, rest = base.split("://", 1)
        return f"{scheme}://" + posixpath.join(rest, *parts)
    return posixpath.join(base, *parts)


def dirname(path: str) -> str:
    if "://" in path:
        scheme, rest = path.split("://", 1)
        return f"{scheme}://" + posixpath.dirname(rest)
    return posixpath.dirname(path)


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "wb", *, before_commit=None):
    """Open ``path`` for writing so that it becomes visible only when complete.

    Local/mounted file systems: write ``<dir>/.inprogress-<uuid>-<name>`` and rename on
    success (rename is atomic within a directory, EFS included). Object stores: an object
    appears only when its upload completes, so write to the final key directly; an
    interrupted multipart upload never becomes visible. On error the partial file is removed.

    ``before_commit``: called with no arguments once the file is written, just before it is
    made visible; whatever it raises leaves nothing visible (the output's claim check,
    ``schemas.claim.Fence``).
    """
    fs, stripped = filesystem(path)
    if is_object_store(fs):
        handle = fs.open(stripped, mode)
        try:
            yield handle
            if before_commit is not None:
                before_commit()
        except BaseException:
            # fsspec's __exit__ (and __del__) would close() the file, which *completes* the
            # upload of the partial object: abort it instead (s3fs: abort the multipart upload;
            # gcsfs: cancel the resumable upload).
            with contextlib.suppress(Exception):
                handle.discard()
            with contextlib.suppress(Exception):
                handle.closed = True
            if protocol(fs) == "memory":  # it stores a file when opened: remove the partial one
                with contextlib.suppress(Exception):
                    fs.rm(stripped)
            raise
        handle.close()
        return
    name = f"{TMP_MARKER}{uuid.uuid4().hex}-{posixpath.basename(stripped)}"
    tmp = posixpath.join(posixpath.dirname(stripped), name)
    counted = None
    try:
        fs.makedirs(posixpath.dirname(stripped) or ".", exist_ok=True)
        with fs.open(tmp, mode) as handle:
            counted = _Counting(handle)
            yield counted
        if before_commit is not None:
            before_commit()
        fs.mv(tmp, stripped)
    except BaseException as err:
        with contextlib.suppress(Exception):
            fs.rm(tmp)
        if isinstance(err, OSError) and err.errno in _FULL:
            raise StorageFullError(
                f"{path}: {os.strerror(err.errno).lower()} after {getattr(counted, 'written', 0):,}"
                f" bytes of it were written{_free_space(stripped)}; free space or choose another "
                "output directory, then rerun (nothing partial was left visible)") from err
        raise


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class StorageFullError(PilepackError, OSError):
    """The device or quota holding an output is full."""


class _Counting:
    """A write handle that counts the bytes written through it (for the disk-full message)."""

    def __init__(self, handle):
        self._handle = handle
        self.written = 0

    def write(self, data) -> int:
        result = self._handle.write(data)
        self.written += len(data)
        return result

    def __getattr__(self, name):
        return getattr(self._handle, name)


def _free_space(path: str) -> str:
    try:
        usage = shutil.disk_usage(posixpath.dirname(path) or ".")
    except OSError:
        return ""
    return f" ({usage.free:,} bytes free of {usage.total:,})"
