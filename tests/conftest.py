"""Shared fixtures: a real S3 endpoint (moto's standalone server on 127.0.0.1).

The server runs in its own process; tests reach it the standard way, through
``AWS_ENDPOINT_URL`` and fake credentials in the environment, so the code under test (s3fs,
boto3, subprocesses) talks HTTP to it exactly as it would to AWS. Nothing is monkeypatched
in the storage layer.
"""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """URL of a moto S3 server in a subprocess (``python -m moto.server``), for the session."""
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(url + "/moto-api/", process=process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


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
