"""Faults of the environment, not of the input: a full disk, a corrupt tokenizer file, two
jobs on one output, inputs that change under a run (see docs/robustness.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time

import pytest

from datagen.pile_files import write_jsonl_zst
from pipeline.launch import claim
from tests.robustness.conftest import good_docs
from tests.robustness.helpers import REPO, SMALL, child_env, load, python_module, run_inprocess


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    src = tmp_path_factory.mktemp("env-src")
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(5, 60))
    return src / "00.jsonl.zst"


# --- a corrupt tokenizer model --------------------------------------------------------------

def test_truncated_tokenizer_model_is_named_with_size_and_sha256(corpus, tokenizer_model,
                                                                 tmp_path, capsys):
    truncated = tmp_path / "cut.model"
    truncated.write_bytes(tokenizer_model.read_bytes()[:1000])
    out = tmp_path / "out"
    assert run_inprocess("--input", corpus, "--output", out, "--tokenizer_model", truncated,
                         *SMALL) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--tokenizer_model {truncated} is not a valid SentencePiece model" in err
    assert "1,000 bytes, sha256 " in err
    assert not (out / claim.CLAIM_NAME).exists()  # the run let go of its output


def test_damaged_tokenizer_of_a_dataset_is_named_by_every_reader(clean_dataset, tmp_path):
    import shutil

    dataset = tmp_path / "copy"
    shutil.copytree(clean_dataset, dataset)
    model = dataset / "tokenizer.model"
    model.write_bytes(model.read_bytes()[:500])
    verified = python_module("pipeline.verify", "--manifest", dataset)
    assert verified.returncode == 1
    assert "tokenizer.model: sha256 does not match the manifest" in verified.stdout
    roundtrip = python_module("pipeline.roundtrip", "--manifest", dataset)
    assert roundtrip.returncode == 2 and "Traceback" not in roundtrip.stderr
    assert "tokenizer.model" in roundtrip.stderr and "corrupt or replaced" in roundtrip.stderr


# --- two jobs on one output --------------------------------------------------------------

def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _write_claim(out, *, pid: int, age_hours: float = 0.0, host: str | None = None):
    out.mkdir(parents=True, exist_ok=True)
    elsewhere = {"host": host, "boot_id": "another-machine"} if host else {}
    held = dataclasses.replace(claim.new_claim(runner="DirectRunner"), run_id="other-run",
                               pid=pid, pid_started=0, started="then",
                               started_unix=time.time() - age_hours * 3600, **elsewhere)
    (out / claim.CLAIM_NAME).write_bytes(held.to_bytes())


def test_a_live_claim_is_refused_naming_its_holder_even_with_overwrite(corpus, tokenizer_model,
                                                                      tmp_path, capsys):
    out = tmp_path / "out"
    _write_claim(out, pid=os.getpid())  # this test process: alive, on this host
    assert run_inprocess("--input", corpus, "--output", out, "--tokenizer_model",
                         tokenizer_model, "--overwrite", *SMALL) == 2
    err = capsys.readouterr().err
    assert f"is being written by run other-run (host {socket.gethostname()}, pid {os.getpid()}"\
        in err
    assert "--overwrite does not replace a running job" in err
    assert (out / claim.CLAIM_NAME).exists() and not (out / "manifest.json").exists()


@pytest.mark.parametrize("stale", ["dead pid", "too old"])
def test_a_stale_claim_is_taken_over_with_a_warning(corpus, tokenizer_model, tmp_path, caplog,
                                                    stale):
    out = tmp_path / "out"
    if stale == "dead pid":
        _write_claim(out, pid=_dead_pid())
    else:
        _write_claim(out, pid=os.getpid(), host="another-host",
                     age_hours=claim.STALE_AFTER_HOURS + 1)
    assert run_inprocess("--input", corpus, "--output", out, "--tokenizer_model",
                         tokenizer_model, *SMALL) == 0
    assert "taking over the claim of run other-run" in caplog.text
    assert load(out)["run_id"] != "other-run" and not (out / claim.CLAIM_NAME).exists()


@pytest.mark.parametrize("where", ["local", "no hard links"])
def test_two_jobs_started_at_once_on_one_output(corpus, tokenizer_model, tmp_path, request,
                                                where):
    """Real processes, --seq_len 64 and 32 into one --output: one writes the dataset, the
    other is refused naming it; never two successes with one dataset left. Also on a file
    system without hard links (FUSE, as gcsfuse and mountpoint-s3 are)."""
    root = tmp_path if where == "local" else request.getfixturevalue("nolink_dir") / tmp_path.name
    out = root / "shared"
    base = [sys.executable, "-m", "pipeline.run", "--input", str(corpus), "--output", str(out),
            "--tokenizer_model", str(tokenizer_model), "--shard_bytes=65536",
            "--encode_processes=1", "--runner=DirectRunner"]
    jobs = [subprocess.Popen(base + [f"--seq_len={n}"], cwd=REPO, env=child_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in (64, 32)]
    results = [(job.wait(timeout=300), job.stdout.read(), job.stderr.read()) for job in jobs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    winner = next(i for i, (code, _, _) in enumerate(results) if code == 0)
    _, _, loser_err = results[1 - winner]
    assert ("is being written by run" in loser_err
            or "already holds a complete dataset" in loser_err), loser_err
    doc = load(out)
    assert doc["seq_len"] == (64, 32)[winner]
    assert not (out / claim.CLAIM_NAME).exists()


def test_an_output_on_a_mount_that_cannot_rename_is_refused_in_one_line(
        corpus, tokenizer_model, norename_dir, tmp_path, capsys):
    """A bucket mount without hard links or renames (mountpoint-s3): refused before anything
    is written, in one line naming the mount and what to use instead."""
    out = norename_dir / tmp_path.name / "out"
    assert run_inprocess("--input", corpus, "--output", out, "--tokenizer_model",
                         tokenizer_model, *SMALL) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out}") and err.count("\n") == 1, err
    assert f"the fuse mount {norename_dir} " in err and "renames no files" in err, err
    assert "--output=s3://BUCKET/PATH or gs://BUCKET/PATH" in err, err
    assert not out.exists() or not list(out.iterdir())


def test_s3_claims_use_a_conditional_put(s3):
    out = s3.url("claimed")
    first = claim.claim(out)
    with pytest.raises(claim.OutputClaimed, match=f"being written by run {first.run_id}"):
        claim.claim(out)
    claim.release(out, first)
    second = claim.claim(out)  # released: free again
    claim.release(out, second)
    assert s3.keys("claimed") == []


# --- a full disk -------------------------------------------------------------------------

@contextlib.contextmanager
def _tmpfs(path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_is_one_line_and_a_rerun_completes_after_space_is_freed(
        corpus, tokenizer_model, tmp_path):
    with _tmpfs(tmp_path / "small", "3m") as disk:
        ballast = disk / "ballast"
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        ballast.write_bytes(b"\0" * (free - (40 << 10)))  # 40 KiB left: less than the run needs
        out = disk / "out"
        args = ["--input", corpus, "--output", out, "--tokenizer_model", tokenizer_model,
                "--encode_processes=1", *SMALL]
        failed = python_module("pipeline.run", *args)
        assert failed.returncode == 2, failed.stderr
        assert "Traceback" not in failed.stderr
        error = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
        assert len(error) == 1, failed.stderr
        assert str(out) in error[0] and "no space left on device" in error[0]
        assert "bytes of it were written" in error[0] and "free space" in error[0]
        assert not list(out.rglob(".inprogress-*"))  # nothing partial visible
        assert not (out / "manifest.json").exists()
        ballast.unlink()
        rerun = python_module("pipeline.run", *args)
        assert rerun.returncode == 0, rerun.stderr
        assert load(out)["totals"]["documents"] == 60


# --- a worker process that dies under a distributed run -------------------------------------

def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    return ""


def test_a_killed_worker_fails_the_run_clearly_and_the_rerun_is_identical(tokenizer_model,
                                                                           tmp_path):
    from tests.robustness.helpers import comparable

    src = tmp_path / "src"
    src.mkdir()
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(9, 400, words=600))
    args = ["--input", src, "--tokenizer_model", tokenizer_model, "--encode_processes=1",
            "--seq_len=64", "--chunk_bytes=16384", "--shard_bytes=65536", "--split=train"]
    out = tmp_path / "out"
    multi = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
             "--direct_num_workers=2"]
    job = subprocess.Popen([sys.executable, "-m", "pipeline.run", *map(str, args), "--output",
                            str(out), *multi], cwd=REPO, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and job.poll() is None and time.monotonic() < deadline:
        parts = out / ".parts"
        workers = [p for p in _descendants(job.pid) if "sdk_worker_main" in _cmdline(p)]
        if workers and parts.exists() and len(list(parts.iterdir())) >= 3:
            killed = max(workers)
            os.kill(killed, 9)
        time.sleep(0.05)
    stdout, stderr = job.communicate(timeout=300)
    assert killed is not None, "the run ended before a worker could be killed"
    if job.returncode == 0:  # the runner retried the lost work: the output must be whole
        assert load(out)["totals"]["documents"] == 400
    else:
        assert job.returncode == 2, stderr[-3000:]
        assert "error: a Beam worker process died during the run" in stderr
        assert "Traceback" not in stderr.split("error: ")[-1]
        assert not (out / "manifest.json").exists()
        rerun = python_module("pipeline.run", *args, "--output", out, *multi)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
    clean = tmp_path / "clean"
    assert run_inprocess(*args, "--output", clean) == 0
    assert comparable(load(out)) | {"config": None} == comparable(load(clean)) | {"config": None}
    for shard in load(clean)["shards"]:
        assert (out / shard["path"]).read_bytes() == (clean / shard["path"]).read_bytes()
    assert not (out / ".parts").exists()
