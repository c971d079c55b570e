"""Reruns that cannot hurt a live job, and only pilepack's own leftovers deleted
(docs/robustness.md, "Reruns and the output claim"; docs/distributed.md,
"Interrupted launchers and reruns").

The portable tests use Beam's real job service (``tests.portable``) with a worker pool whose
``StartWorker`` never returns, so a submitted job stays RUNNING, waiting for its worker, for as
long as a test needs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import sys
import threading
import time

import pytest

from datagen.pile_files import write_jsonl_zst
from pipeline.config import PipelineConfig
from pipeline.dataset.manifest import Summary, _CommitManifestFn
from pipeline.launch import claim
from pipeline.launch.output_dir import RUN_RECORD
from pipeline.write.shard_plan import PARTS_DIR
from schemas.claim import Claim, ClaimLost
from schemas.dataset_spec import DatasetSpec
from tests.portable import portable_services
from tests.robustness.conftest import good_docs
from tests.robustness.helpers import REPO, SMALL, child_env, load, run_inprocess


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    src = tmp_path_factory.mktemp("claims-src")
    write_jsonl_zst(src / "00.jsonl.zst", good_docs(7, 20))
    return src / "00.jsonl.zst"


def _claim_of(out) -> Claim | None:
    with contextlib.suppress(FileNotFoundError):
        return Claim.from_bytes((out / claim.CLAIM_NAME).read_bytes())
    return None


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# --- an interrupted launcher, a job that goes on ---------------------------------------------

@pytest.fixture(scope="module")
def stuck_portable(tmp_path_factory):
    """Beam's job service, and a worker pool that never starts a worker: a submitted job stays
    RUNNING until it is cancelled. Yields (beam_args, job_endpoint)."""
    import concurrent.futures

    import grpc
    from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc

    over = threading.Event()

    class NeverStarts(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
        def StartWorker(self, request, context):
            over.wait()
            return beam_fn_api_pb2.StartWorkerResponse(error="the test is over")

    pool = grpc.server(concurrent.futures.ThreadPoolExecutor(16))  # a thread per job's worker
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(NeverStarts(), pool)
    port = pool.add_insecure_port("127.0.0.1:0")
    pool.start()
    try:
        with portable_services(tmp_path_factory.mktemp("svc")) as services:
            yield ([a for a in services.beam_args if not a.startswith("--environment_config")]
                   + [f"--environment_config=127.0.0.1:{port}"], services.job_endpoint)
    finally:
        over.set()
        pool.stop(0)


def _job_state(endpoint: str, job_id: str) -> str:
    from pipeline.launch import jobs
    from schemas.claim import Job

    return jobs.job_state(Job(kind="portable", id=job_id, endpoint=endpoint))[0]


# ``python -m pipeline.run``, with Python's own SIGINT handler installed first. A shell that
# starts the suite in the background (``cmd &``, ``nohup``) leaves SIGINT ignored, a child
# inherits that, and its Python then never raises KeyboardInterrupt: the launcher under test must
# see the signal a terminal sends. (Not a ``preexec_fn``: unsafe in a process with threads.)
_RUN_WITH_SIGINT = ("import runpy, signal, sys; "
                    "signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "sys.argv[0] = 'pipeline.run'; "
                    "runpy.run_module('pipeline.run', run_name='__main__', alter_sys=True)")


def _launch_until_submitted(args: list, out, log) -> tuple[subprocess.Popen, Claim]:
    """Start ``python -m pipeline.run ARGS`` and wait until its claim names its job."""
    process = subprocess.Popen([sys.executable, "-c", _RUN_WITH_SIGINT, *map(str, args)],
                               cwd=REPO, env=child_env(), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while (held := _claim_of(out)) is None or held.job is None:
        assert process.poll() is None, f"the launcher exited with {process.returncode}"
        assert time.monotonic() < deadline, "no job recorded in the claim within 120 s"
        time.sleep(0.05)
    return process, held


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT, --no-cancel_on_interrupt"])
def test_a_rerun_is_refused_while_the_interrupted_launchers_job_runs(
        how, stuck_portable, corpus, tokenizer_model, tmp_path, capsys, caplog):
    beam_args, endpoint = stuck_portable
    out = tmp_path / "out"
    args = ["--input", corpus, "--output", out, "--tokenizer_model", tokenizer_model, *SMALL]
    extra = ["--no-cancel_on_interrupt"] if "no-cancel" in how else []
    with open(tmp_path / "launcher.log", "wb") as log:
        launcher, held = _launch_until_submitted([*args, *extra, *beam_args], out, log)
        launcher.send_signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGINT)
        launcher.wait(timeout=60)
    assert held.job.kind == "portable" and held.job.endpoint == endpoint
    assert _job_state(endpoint, held.job.id) == "RUNNING"  # the job outlived its launcher
    assert _claim_of(out) == held

    # The rerun (any runner, even with --overwrite) is refused, naming the job and the cancel.
    assert run_inprocess(*args, "--overwrite") == 2
    err = capsys.readouterr().err
    assert f"is being written by run {held.run_id}" in err
    assert f"its job {held.job.id} is RUNNING" in err
    assert f"To stop it: cancel job {held.job.id} through its job service at {endpoint}" in err
    assert _claim_of(out) == held and not (out / "manifest.json").exists()

    # Once the job is cancelled, the rerun takes the output over and completes.
    _cancel(endpoint, held.job.id)
    assert run_inprocess(*args) == 0
    assert f"taking over the claim of run {held.run_id}" in caplog.text
    assert f"its job {held.job.id} is CANCELLED" in caplog.text
    assert load(out)["run_id"] != held.run_id and _claim_of(out) is None


def _cancel(endpoint: str, job_id: str) -> None:
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    with grpc.insecure_channel(endpoint) as channel:
        beam_job_api_pb2_grpc.JobServiceStub(channel).Cancel(
            beam_job_api_pb2.CancelJobRequest(job_id=job_id), timeout=10)


def test_an_interrupted_launcher_cancels_its_job_and_lets_go(stuck_portable, corpus,
                                                             tokenizer_model, tmp_path):
    beam_args, endpoint = stuck_portable
    out = tmp_path / "out"
    with open(tmp_path / "launcher.log", "wb") as log:
        launcher, held = _launch_until_submitted(
            ["--input", corpus, "--output", out, "--tokenizer_model", tokenizer_model, *SMALL,
             *beam_args], out, log)
        launcher.send_signal(signal.SIGTERM)  # as a scheduler or a closed terminal sends
        assert launcher.wait(timeout=60) == 130
    text = (tmp_path / "launcher.log").read_text()
    assert f"interrupted: cancelling portable job {held.job.id}" in text, text
    assert _job_state(endpoint, held.job.id) == "CANCELLED"
    assert _claim_of(out) is None  # released: the job is over


def _job_steps(endpoint: str, job_id: str) -> set[str]:
    """The names of the top-level steps of the pipeline a job runs."""
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    with grpc.insecure_channel(endpoint) as channel:
        pipeline = beam_job_api_pb2_grpc.JobServiceStub(channel).GetPipeline(
            beam_job_api_pb2.GetJobPipelineRequest(job_id=job_id), timeout=10).pipeline
    return {t.unique_name for t in pipeline.components.transforms.values()
            if "/" not in t.unique_name}


@pytest.mark.parametrize("how", ["SIGINT, --no-cancel_on_interrupt", "SIGTERM"])
def test_a_launcher_interrupted_during_the_pre_pass_binds_the_claim_to_that_job(
        how, stuck_portable, corpus, tokenizer_model, tmp_path, capsys):
    beam_args, endpoint = stuck_portable
    out = tmp_path / "out"
    args = ["--input", corpus, "--output", out, "--tokenizer_model", tokenizer_model,
            "--dedup=exact", *SMALL]  # --dedup: a pre-pass job before the main one
    cancel = "no-cancel" not in how
    with open(tmp_path / "launcher.log", "wb") as log:
        launcher, held = _launch_until_submitted(
            [*args, *([] if cancel else ["--no-cancel_on_interrupt"]), *beam_args], out, log)
        steps = _job_steps(endpoint, held.job.id)
        launcher.send_signal(signal.SIGTERM if cancel else signal.SIGINT)
        assert launcher.wait(timeout=60) == 130
    assert "FindDrops" in steps and "Tokenize" not in steps, steps  # the pre-pass job
    if cancel:
        text = (tmp_path / "launcher.log").read_text()
        assert f"interrupted: cancelling portable job {held.job.id}" in text, text
        assert _job_state(endpoint, held.job.id) == "CANCELLED"
        assert _claim_of(out) is None  # released: the job is over
        return
    assert _job_state(endpoint, held.job.id) == "RUNNING" and _claim_of(out) == held
    assert run_inprocess(*args, "--overwrite") == 2  # it would clear .quality/ under the job
    assert f"its job {held.job.id} is RUNNING" in capsys.readouterr().err
    assert _claim_of(out) == held and not (out / "manifest.json").exists()
    _cancel(endpoint, held.job.id)


# --- a stale run cannot commit ---------------------------------------------------------------

def test_a_run_whose_claim_was_taken_over_cannot_commit(tmp_path):
    out = tmp_path / "out"
    old = claim.claim(str(out))
    # Its launcher dies (its job, say, lives on unseen); a new run takes the output over.
    stale = dataclasses.replace(old, pid=_dead_pid(), pid_started=0)
    (out / claim.CLAIM_NAME).write_bytes(stale.to_bytes())
    new = claim.claim(str(out))
    (out / PARTS_DIR).mkdir()
    (out / PARTS_DIR / "00000-0000000.tfrecords").write_bytes(b"the new run's part")

    with pytest.raises(ClaimLost, match=f"now claimed by run {new.run_id}.*not by run "
                                        f"{old.run_id} \\(this job\\)"):
        list(_commit_fn(out, run_id=old.run_id).process(Summary()))
    assert not (out / "manifest.json").exists()
    assert (out / PARTS_DIR / "00000-0000000.tfrecords").exists()  # the new run's, untouched

    (path,) = _commit_fn(out, run_id=new.run_id).process(Summary())  # the holder commits
    assert path.endswith("manifest.json")
    claim.release(str(out), new)
    with pytest.raises(ClaimLost, match=f"no longer claimed by run {new.run_id}"):
        list(_commit_fn(out, run_id=new.run_id).process(Summary()))


def _commit_fn(out, *, run_id: str) -> _CommitManifestFn:
    tokenizer = {"file": "tokenizer.model", "sha256": "ab" * 32, "vocab_size": 300,
                 "special_ids": {"pad": 0, "eos": 1, "unk": 2, "bos": 3}, "lossless": True}
    return _CommitManifestFn(config=PipelineConfig(input="in", output=str(out), seq_len=16),
                             spec=DatasetSpec(seq_len=16, vocab_size=300), tokenizer=tokenizer,
                             inputs=[], run_id=run_id)


# --- only pilepack's own leftovers are deleted ------------------------------------------------

def test_a_users_tfrecords_in_output_survive_runs_and_overwrites(corpus, tokenizer_model,
                                                                 tmp_path, capsys):
    out = tmp_path / "data"  # split "data"
    out.mkdir()
    # Named like split "data"'s shards: the run could overwrite them, so it refuses untouched.
    clashing = {"data-00000-of-00001.tfrecord": b"the user's own records",
                "data-00009-of-00010.tfrecord": b"more of them"}
    users = {"mine-00000-of-00010.tfrecord": b"other records", "notes.txt": b"keep"}
    for name, data in {**clashing, **users}.items():
        (out / name).write_bytes(data)
    args = ["--input", corpus, "--output", out, "--tokenizer_model", tokenizer_model, *SMALL]
    capsys.readouterr()
    assert run_inprocess(*args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out} holds data-00000-of-00001.tfrecord, "
                          "data-00009-of-00010.tfrecord: named like") and "move or" in err, err
    assert sorted(p.name for p in out.iterdir()) == sorted({**clashing, **users})
    assert _claim_of(out) is None
    for name in clashing:  # moved away: the others survive runs and overwrites
        (out / name).unlink()
    assert run_inprocess(*args) == 0
    assert run_inprocess(*args, "--overwrite") == 0
    for name, data in users.items():
        assert (out / name).read_bytes() == data, name
    doc = load(out)
    assert [s["path"] for s in doc["shards"]] == ["data-00000-of-00001.tfrecord"]
    assert not (out / RUN_RECORD).exists() and _claim_of(out) is None

