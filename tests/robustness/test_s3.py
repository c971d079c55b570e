"""The pipeline against a real S3 endpoint: moto's server on 127.0.0.1, reached through s3fs.

The endpoint and the (fake) credentials come from the standard AWS environment variables
(``tests/conftest.py``); nothing in the storage layer is patched. A fault-injecting proxy
(``fault_proxy.py``) between s3fs and the server checks that throttling and 5xx errors are
retried without changing a byte of the output.
"""

from __future__ import annotations

import json
import logging

import pytest

from common import storage
from datagen.pile_files import pile_doc, write_jsonl_gz, write_jsonl_zst
from tests.conftest import ACCESS_KEY, clear_s3fs_cache, s3_environment, use_s3_environment
from tests.robustness.conftest import good_docs
from tests.robustness.fault_proxy import FaultProxy, Forbidding, Recorder
from tests.robustness.helpers import SMALL, comparable, load, python_module, run_inprocess


def _upload_inputs(s3, tmp_path, prefix="in") -> None:
    src = tmp_path / "src"
    src.mkdir()
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(11, 30), frames=2, split_line=True)
    write_jsonl_gz(src / "01.jsonl.gz", good_docs(12, 20))
    write_jsonl_zst(src / "02.jsonl.zst", [pile_doc("fine"), b'{"text": "bro', {"text": 1},
                                           pile_doc("also fine")])
    for path in sorted(src.iterdir()):
        s3.put(f"{prefix}/{path.name}", path.read_bytes())
    return src


def test_failed_upload_leaves_no_object(s3):
    """An exception while writing aborts the upload: no partial object, no pending upload."""
    small, large = s3.url("out/small.tfrecord"), s3.url("out/large.tfrecord")
    for url, size in ((small, 1000), (large, 60 * 2**20)):  # large: a multipart upload
        with pytest.raises(RuntimeError, match="writer died"):
            with storage.atomic_open(url, "wb") as handle:
                handle.write(b"x" * size)
                raise RuntimeError("writer died")
    assert s3.keys() == []
    assert s3.client().list_multipart_uploads(Bucket=s3.bucket).get("Uploads", []) == []
    with storage.atomic_open(small, "wb") as handle:  # and a successful write does commit
        handle.write(b"complete")
    assert s3.get("out/small.tfrecord") == b"complete"


def test_pipeline_reads_and_writes_s3(s3, tmp_path, capfd, caplog):
    caplog.set_level(logging.DEBUG)  # botocore / s3fs debug logs too: still no secret
    src = _upload_inputs(s3, tmp_path)
    out = s3.url("datasets/train")
    args = ["--vocab_size=400", "--max_bad_fraction=0.5", *SMALL]
    assert run_inprocess("--input", s3.url("in/"), "--output", out, *args) == 0
    doc = load(out)

    keys = s3.keys("datasets/train/")
    listed = {f"datasets/train/{s['path']}" for s in doc["shards"]}
    listed |= {f"datasets/train/{d['path']}" for d in doc["dead_letters"]}
    listed |= {f"datasets/train/{f['path']}" for f in doc["doc_hashes"]["files"]}
    assert set(keys) == listed | {"datasets/train/manifest.json",
                                  "datasets/train/tokenizer.model",
                                  "datasets/train/tokenizer.vocab"}
    assert len(doc["shards"]) >= 2  # shards span input files: no short tail per file
    assert doc["accounting"]["rejected"] == {"invalid_json": 1, "text_not_string": 1}
    assert [i["path"] for i in doc["inputs"]] == [
        s3.url("in/00.jsonl.zst"), s3.url("in/01.jsonl.gz"), s3.url("in/02.jsonl.zst")]
    letters = s3.get(f"datasets/train/{doc['dead_letters'][0]['path']}").decode()
    assert json.loads(letters.splitlines()[0])["file"] == s3.url("in/02.jsonl.zst")

    # An independent reader (a fresh process, only the environment) verifies it in depth.
    verified = python_module("pipeline.verify", "--manifest", f"{out}/manifest.json", "--deep",
                             env=s3_environment(s3.endpoint))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{len(doc['shards'])} shards" in verified.stdout

    # The same input read from local disk, with the tokenizer read from S3, gives the same
    # bytes. (Training twice would not: SentencePiece stores its temporary path in the model.)
    local = tmp_path / "local" / "train"
    assert run_inprocess("--input", src, "--output", local, *args,
                         "--tokenizer_model", f"{out}/tokenizer.model") == 0
    assert comparable(load(local)) == comparable(doc)

    # The secret is nowhere: not in logs, output, manifest, dead letters or any object.
    captured = capfd.readouterr()
    logs = caplog.text
    outputs = [captured.out, captured.err, verified.stdout, verified.stderr]
    for key in s3.keys():
        outputs.append(s3.get(key).decode("latin-1"))
    for output in outputs + [logs]:
        assert s3.secret not in output
    for output in outputs:  # the key id too, except in botocore's own DEBUG request dumps
        assert ACCESS_KEY not in output


def test_transient_s3_errors_are_retried_and_change_nothing(s3, s3_server, tmp_path,
                                                            tokenizer_model, monkeypatch):
    _upload_inputs(s3, tmp_path)
    s3.put("model/tokenizer.model", tokenizer_model.read_bytes())
    args = ["--input", s3.url("in/"), "--tokenizer_model", s3.url("model/tokenizer.model"),
            "--max_bad_fraction=0.5", *SMALL]
    assert run_inprocess(*args, "--output", s3.url("clean/train")) == 0
    clean = load(s3.url("clean/train"))

    with FaultProxy(s3_server, every=3, max_faults=60) as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        assert run_inprocess(*args, "--output", s3.url("faulty/train")) == 0
        faults, requests = list(proxy.faults), proxy.requests
    use_s3_environment(monkeypatch, s3_server)

    # Every third request failed (up to 60): claims, listings, reads of inputs, uploads.
    print(f"{len(faults)} injected errors in {requests} requests")
    assert len(faults) >= 10, faults
    assert {status for _, _, status in faults} == {500, 503}
    assert any(m == "GET" and "/in/" in p for m, p, _ in faults), faults
    assert any(m == "PUT" and ".tfrecord" in p for m, p, _ in faults), faults  # parts or shards
    faulty = load(s3.url("faulty/train"))
    assert comparable(faulty) == comparable(clean)
    for shard in clean["shards"]:
        assert s3.get(f"faulty/train/{shard['path']}") == s3.get(f"clean/train/{shard['path']}")
    assert [k.split("/", 2)[2] for k in s3.keys("faulty/")] == [
        k.split("/", 2)[2] for k in s3.keys("clean/")]


def test_s3_output_is_never_clobbered_and_leftovers_are_removed(s3, tmp_path, tokenizer_model,
                                                                 capsys):
    _upload_inputs(s3, tmp_path)
    args = ["--input", s3.url("in/"), "--output", s3.url("out/train"), "--tokenizer_model",
            tokenizer_model, "--max_bad_fraction=0.5", *SMALL]
    assert run_inprocess(*args) == 0
    manifest = s3.get("out/train/manifest.json")
    clear_s3fs_cache()  # each run below as a new process would see the bucket
    assert run_inprocess(*args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert s3.get("out/train/manifest.json") == manifest

    # A killed run leaves shards (complete objects) and its run record but no manifest: the
    # rerun removes what the record names, and nothing else.
    keys = s3.keys("out/train/")
    s3.client().delete_object(Bucket=s3.bucket, Key="out/train/manifest.json")
    s3.put("out/train/.pilepack-run.json", b'{"run_id": "killed", "splits": ["train"]}')
    s3.put("out/train/train-00009-of-00010.tfrecord", b"stale shard of an earlier run")
    s3.put("out/train/dead_letters/train-00009.jsonl", b"{}\n")
    s3.put("out/train/data-00000-of-00010.tfrecord", b"a user's own")
    keys.append("out/train/data-00000-of-00010.tfrecord")
    clear_s3fs_cache()
    assert run_inprocess(*args) == 0
    assert s3.keys("out/train/") == sorted(keys)
    assert comparable(load(s3.url("out/train"))) == comparable(json.loads(manifest))


def test_a_missing_s3_bucket_is_named_at_once(s3, s3_server, tmp_path, monkeypatch, capsys):
    """A mistyped bucket is not a lost race: one line naming it, after one attempt."""
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "A short line of prose, enough to be read."}) + "\n")
    with Recorder(s3_server) as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        code = run_inprocess("--input", source, "--output", "s3://no-such-bucket-typo/train",
                             "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the bucket s3://no-such-bucket-typo does not exist" in err, err
    assert "Traceback" not in err and "claim it" not in err
    assert [method for method, _ in proxy.seen if method == "PUT"] == ["PUT"], proxy.seen


@pytest.mark.parametrize("where", ["output", "input"])
def test_an_s3_server_answering_403_is_one_line(s3, s3_server, tmp_path, monkeypatch, capsys,
                                                where):
    """Credentials that the bucket's policy or IAM refuses: one line naming the path and the
    fix, exit 2, after one request (403 is not retried)."""
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "A short line of prose, enough to be read."}) + "\n")
    paths = {"output": (source, s3.url("train")), "input": (s3.url("in.jsonl"), tmp_path / "out")}
    named = str(paths[where][where == "output"])
    with Forbidding(s3_server) as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        code = run_inprocess("--input", paths[where][0], "--output", paths[where][1],
                             "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {named}") and err.count("\n") == 1, err
    assert "access denied (AccessDenied: Access Denied)" in err, err
    assert "s3:PutObject" in err and "bucket policy" in err, err
    assert ACCESS_KEY not in err
    assert len(proxy.faults) == 1, proxy.faults


def test_s3_refusing_the_credentials_is_one_line(s3, s3_server, tmp_path, monkeypatch, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "A short line of prose, enough to be read."}) + "\n")
    with Forbidding(s3_server, code="InvalidAccessKeyId",
                    message="The AWS Access Key Id you provided does not exist.") as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        code = run_inprocess("--input", source, "--output", s3.url("train"), "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {s3.url('train')}/") and err.count("\n") == 1, err
    assert "the AWS credentials were refused (InvalidAccessKeyId: " in err, err
    assert "AWS_ACCESS_KEY_ID" in err and ACCESS_KEY not in err
