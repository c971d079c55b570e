"""Object-store failures a user can cause, through every command that reads a dataset:
``python -m pipeline.verify``, ``python -m pipeline.report`` and the trainer
(``python -m trainer.train --train_manifest=...``), on S3 (moto behind the fault proxy) and GCS
(fake-gcs-server, or a stub answering what the emulator cannot). Each is one ``error:`` line
naming the path and the fix, exit 2; throttling that outlasts the client's own retries too, for
the pipeline as well.
"""

from __future__ import annotations

import json
import time

import pytest

from pipeline import report, verify
from tests.conftest import ACCESS_KEY, use_gcs_environment, use_s3_environment
from tests.robustness.fault_proxy import Forbidding, GcsAnswering, Throttling
from tests.robustness.helpers import run_inprocess
from trainer import train

COMMANDS = {
    "verify": lambda manifest, tmp_path: verify.main(["--manifest", manifest]),
    "report": lambda manifest, tmp_path: report.main(
        ["--manifest", manifest, "--output", str(tmp_path / "report")]),
    "train": lambda manifest, tmp_path: train.main(
        [f"--train_manifest={manifest}", f"--model_dir={tmp_path / 'model'}", "--preset=tiny",
         "--steps=1", "--global_batch_size=2"]),
}


def _one_line(capsys, code: int, path: str) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {path}") and err.count("\n") == 1, err
    assert "Traceback" not in err and ACCESS_KEY not in err
    return err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("store", ["s3", "gs"])
def test_a_missing_bucket_is_named(command, store, request, tmp_path, capsys):
    request.getfixturevalue({"s3": "s3", "gs": "gcs"}[store])  # the emulator, in the env
    manifest = f"{store}://no-such-bucket-typo/data/manifest.json"
    err = _one_line(capsys, COMMANDS[command](manifest, tmp_path), manifest)
    assert f"the bucket {store}://no-such-bucket-typo does not exist" in err, err
    assert "check its name for a typo" in err, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_s3_answering_403_is_named(command, s3, s3_server, tmp_path, monkeypatch, capsys):
    manifest = s3.url("data/manifest.json")
    with Forbidding(s3_server) as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        code = COMMANDS[command](manifest, tmp_path)
    err = _one_line(capsys, code, manifest)
    assert ": access denied (" in err and "s3:GetObject" in err, err  # a HEAD has no code


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_s3_refusing_the_credentials_is_named(command, s3, s3_server, tmp_path, monkeypatch,
                                               capsys):
    manifest = s3.url("data/manifest.json")
    with Forbidding(s3_server, code="InvalidAccessKeyId",
                    message="The AWS Access Key Id you provided does not exist.") as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        code = COMMANDS[command](manifest, tmp_path)
    err = _one_line(capsys, code, manifest)
    # The first request is a HEAD, whose 403 carries no code: the line names both fixes.
    assert "AWS_ACCESS_KEY_ID" in err and "s3:GetObject" in err, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_gcs_answering_403_is_named(command, gcs, tmp_path, monkeypatch, capsys):
    manifest = gcs.url("data/manifest.json")
    with GcsAnswering(403) as stub:
        use_gcs_environment(monkeypatch, stub.url)
        code = COMMANDS[command](manifest, tmp_path)
    err = _one_line(capsys, code, manifest)
    assert "access denied (caller does not have" in err, err
    assert "roles/storage.objectAdmin" in err, err


def _fast_s3_retries(monkeypatch) -> None:
    # botocore's standard retry count, lowered for speed; s3fs still retries SlowDown itself.
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")


def test_s3_throttling_past_the_retries_is_one_line(s3, s3_server, tmp_path, monkeypatch,
                                                    capsys):
    """503 SlowDown to every request: the clients retry (each request is sent more than once),
    then verify and the pipeline stop with one line naming the path and what to change."""
    manifest = s3.url("data/manifest.json")
    with Throttling(s3_server) as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        _fast_s3_retries(monkeypatch)
        err = _one_line(capsys, COMMANDS["verify"](manifest, tmp_path), manifest)
        assert len(proxy.faults) >= 2, proxy.faults  # retried: AWS_MAX_ATTEMPTS
        source = tmp_path / "in.jsonl"
        source.write_text(json.dumps({"text": "A short line of prose, enough to be read."}))
        run_code = run_inprocess("--input", source, "--output", s3.url("train"),
                                 "--vocab_size=400")
    # (a HEAD's 503 has no body: the code is the status)
    assert "S3 kept answering " in err and "(too many requests) after the client's retries" \
        in err, err
    assert "retry later" in err and "fewer Beam workers" in err, err
    err = _one_line(capsys, run_code, s3.url("train"))
    assert "S3 kept answering SlowDown" in err, err


@pytest.mark.slow
def test_gcs_throttling_past_the_retries_is_one_line(gcs, tmp_path, monkeypatch, capsys):
    """429 to every request (gcsfs retries it with backoff, about half a minute): one line."""
    manifest = gcs.url("data/manifest.json")
    with GcsAnswering(429) as stub:
        use_gcs_environment(monkeypatch, stub.url)
        started = time.monotonic()
        code = COMMANDS["verify"](manifest, tmp_path)
        print(f"{stub.requests} requests in {time.monotonic() - started:.1f}s")
    err = _one_line(capsys, code, manifest)
    assert "Cloud Storage kept answering 429 (too many requests)" in err, err
    assert "retry later" in err and "higher quota" in err, err
    assert stub.requests > 1
