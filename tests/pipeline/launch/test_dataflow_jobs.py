"""``python -m pipeline.run --runner=DataflowRunner`` through the launcher, against a stand-in
Dataflow service (``tests.dataflow_standin``) with staging on the GCS emulator: Beam's real
``DataflowRunner`` submits each of a run's jobs (the tokenizer's training sample, the quality
pre-pass, the main job) as real job requests, and the launcher binds ``--output``'s claim to
each job id the service returns (``pipeline.launch.claim.Binding``, the Dataflow branch of
``pipeline.launch.jobs.submitted_job``), reads the job's state from it, cancels it on SIGTERM,
and releases the claim once the job is over.

Nothing runs the jobs: where the launcher goes on after a job (the sample job), the test writes
what its workers would have (with the sampling stage's own writer) before it marks it done.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time

import pytest

from datagen.pile_files import write_jsonl_zst
from pipeline.launch import claim
from pipeline.tokenize.prepare import SAMPLE_DIR
from pipeline.tokenize.training_sample import write_sample_file
from schemas.claim import Claim, Job
from tests.dataflow_standin import dataflow_standin
from tests.robustness.conftest import good_docs
from tests.robustness.helpers import REPO, child_env, run_inprocess, text

PROJECT, REGION = "pilepack-test", "europe-west4"


@pytest.fixture
def standin():
    """The stand-in service; any launcher a test leaves running is killed first (it would
    retry its calls to the service for minutes)."""
    with dataflow_standin() as service:
        yield service
        for launcher in service.launchers:
            if launcher.poll() is None:
                launcher.kill()
                launcher.wait()


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl_zst(tmp_path / "in" / "00.jsonl.zst", good_docs(5, 20))
    return tmp_path / "in"


def _launch(gcs, standin, tmp_path, *flags) -> subprocess.Popen:
    """The launcher with Beam's DataflowRunner: the stand-in's endpoint, no credentials,
    staging on the GCS emulator (the environment's STORAGE_EMULATOR_HOST)."""
    env = child_env({"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-credentials.json"),
                     "CLOUDSDK_CONFIG": str(tmp_path / "no-gcloud")})
    argv = [sys.executable, "-m", "pipeline.run", "--input", str(tmp_path / "in"),
            "--output", str(tmp_path / "out"), "--seq_len=64", *flags,
            "--runner=DataflowRunner", f"--project={PROJECT}", f"--region={REGION}",
            f"--temp_location={gcs.url('tmp')}", "--sdk_location=container",
            f"--dataflow_endpoint={standin.endpoint}", "--no_auth"]
    with open(tmp_path / "launcher.log", "wb") as log:
        launcher = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    standin.launchers.append(launcher)
    return launcher


def _claim(tmp_path) -> Claim | None:
    path = tmp_path / "out" / claim.CLAIM_NAME
    return Claim.from_bytes(path.read_bytes()) if path.exists() else None


def _bound(tmp_path, job_id: str, launcher, *, timeout: float = 60.0) -> Claim:
    """The claim, once it names ``job_id``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = _claim(tmp_path)
        if held is not None and held.job is not None and held.job.id == job_id:
            return held
        assert launcher.poll() is None, (tmp_path / "launcher.log").read_text()[-3000:]
        time.sleep(0.05)
    raise TimeoutError(f"the claim was not bound to {job_id}")


def _steps(gcs, job: dict) -> set[str]:
    """The names of the steps of the pipeline Beam staged for ``job`` (runner v2 submits
    the Runner API proto as ``pipeline.pb`` in the job's staging location)."""
    from apache_beam.portability.api import beam_runner_api_pb2

    staging = job["environment"]["sdkPipelineOptions"]["options"]["staging_location"]
    key = staging.removeprefix(f"gs://{gcs.bucket}/") + "/pipeline.pb"
    graph = beam_runner_api_pb2.Pipeline.FromString(gcs.get(key))
    return {t.unique_name for t in graph.components.transforms.values()}


def _finish(launcher, tmp_path, *, timeout: float = 120.0) -> tuple[int, str]:
    return launcher.wait(timeout=timeout), (tmp_path / "launcher.log").read_text()


@pytest.mark.slow
def test_the_sample_job_then_the_main_job_each_bound_then_cancelled(tmp_path, gcs, standin,
                                                                    corpus):
    launcher = _launch(gcs, standin, tmp_path, "--vocab_size=400")
    sample = standin.wait_for_job(1)
    held = _bound(tmp_path, "standin-1", launcher)
    assert held.job == Job(kind="dataflow", id="standin-1", project=PROJECT, region=REGION,
                          endpoint=standin.endpoint, no_auth=True)
    assert held.phase == "submitted"
    assert "Sample" in _steps(gcs, sample) and "WriteShards" not in _steps(gcs, sample)
    # Its workers' work: the sample file, with the sampling stage's own writer; then it ends.
    write_sample_file([(i / 20, "Pile-CC", text(i, 300)) for i in range(20)],
                      directory=str(tmp_path / "out" / SAMPLE_DIR), file_index=0)
    standin.set_state("standin-1", "JOB_STATE_DONE")

    main = standin.wait_for_job(2)  # the tokenizer trained in the launcher, then the main job
    held = _bound(tmp_path, "standin-2", launcher)
    assert held.job == Job(kind="dataflow", id="standin-2", project=PROJECT, region=REGION,
                          endpoint=standin.endpoint, no_auth=True)
    assert {"Tokenize", "WriteShards", "Manifest"} <= _steps(gcs, main)
    assert standin.seen("GET", "standin-1")  # the launcher read the first job's state

    launcher.send_signal(signal.SIGTERM)  # an interrupted launcher cancels its job
    code, log = _finish(launcher, tmp_path)
    assert code != 0, log
    assert "interrupted: cancelling dataflow job standin-2" in log, log[-3000:]
    assert [r.body for r in standin.seen("PUT", "standin-2")], log[-3000:]
    assert standin.jobs["standin-2"]["currentState"] == "JOB_STATE_CANCELLED"
    assert _claim(tmp_path) is None  # released: the job is over


@pytest.mark.slow
def test_the_quality_pre_pass_job_bound_and_its_failure_releases_the_claim(
        tmp_path, gcs, standin, corpus, tiny_model):
    launcher = _launch(gcs, standin, tmp_path, "--dedup=exact",
                       f"--tokenizer_model={tiny_model}")
    prepass = standin.wait_for_job(1)
    held = _bound(tmp_path, "standin-1", launcher)
    assert held.job == Job(kind="dataflow", id="standin-1", project=PROJECT, region=REGION,
                          endpoint=standin.endpoint, no_auth=True)
    steps = _steps(gcs, prepass)
    assert "FindDrops" in steps and "WriteShards" not in steps, sorted(steps)

    standin.set_state("standin-1", "JOB_STATE_FAILED")
    code, log = _finish(launcher, tmp_path)
    assert code != 0, log
    assert standin.seen("GET", "standin-1")  # the state, read through the runner
    assert _claim(tmp_path) is None  # the job failed: nothing of this run runs any more
    assert len(standin.jobs) == 1  # no main job after a failed pre-pass


def _bound_elsewhere(out, standin) -> Claim:
    """``out``'s claim as a launcher on another machine leaves it, bound to the stand-in's job
    standin-1 (submitted with --dataflow_endpoint and --no_auth)."""
    out.mkdir(parents=True)
    holder = Claim(run_id="elsewhere", host="other-host", pid=1, started="2026-01-01T00:00:00",
                   started_unix=time.time(), boot_id="another-machine", runner="DataflowRunner",
                   phase="submitted",
                   job=Job(kind="dataflow", id="standin-1", project=PROJECT, region=REGION,
                           endpoint=standin.endpoint, no_auth=True))
    (out / claim.CLAIM_NAME).write_bytes(holder.to_bytes())
    standin.add_job("standin-1", project=PROJECT, region=REGION, state="JOB_STATE_DONE")
    return holder


def test_a_rerun_asks_the_job_state_where_the_job_was_submitted(tmp_path, standin, corpus):
    """The claim's job is asked at its --dataflow_endpoint, without credentials: a finished
    job's claim is taken over."""
    out = tmp_path / "out"
    _bound_elsewhere(out, standin)
    assert run_inprocess("--input", corpus, "--output", out, "--vocab_size=400") == 0
    assert standin.seen("GET", "standin-1")
    assert (out / "manifest.json").exists()


@pytest.mark.parametrize("answer", [403, 500, "down"])
def test_a_job_whose_state_cannot_be_asked_is_one_line(tmp_path, standin, corpus, capsys,
                                                       answer):
    out = tmp_path / "out"
    holder = _bound_elsewhere(out, standin)
    if answer == "down":
        stopped = dataflow_standin()  # a port nothing serves once it is closed again
        with stopped as gone:
            endpoint = gone.endpoint
        job = dataclasses.replace(holder.job, endpoint=endpoint)
        (out / claim.CLAIM_NAME).write_bytes(dataclasses.replace(holder, job=job).to_bytes())
    else:
        standin.failing = answer
    code = run_inprocess("--input", corpus, "--output", out, "--vocab_size=400")
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {out} is claimed by run elsewhere") and err.count("\n") == 1
    assert "job standin-1 (region europe-west4, project pilepack-test)" in err, err
    assert f"console.cloud.google.com/dataflow/jobs/{REGION}/standin-1" in err, err
    assert f"gcloud dataflow jobs cancel standin-1 --region {REGION}" in err, err
    assert "--take_over_claim=elsewhere" in err, err
    if answer != "down":
        assert standin.seen("GET", "standin-1"), "asked somewhere else"
    assert not (out / "manifest.json").exists()
