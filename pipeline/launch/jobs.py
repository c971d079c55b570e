"""Which job a run started, and whether it still runs: what ``--output``'s claim is bound to.

The DirectRunner runs the job inside the launching process, so the job lives while that process
does. A process is named by its machine's boot id, its pid namespace (each container has its
own), its pid and the pid's start time (pids are reused): host name and pid alone repeat across
containers (every SageMaker host is ``algo-1``). Its liveness can be seen only from the same
machine and pid namespace (Linux ``/proc``); elsewhere it is unknown.

Other runners run the job apart from the launcher, which may be interrupted while the job goes
on. The job's id is recorded in the claim once submitted, and its state is asked of the runner:
portable runners (Flink, Spark, Beam's job service) through the Job API at ``--job_endpoint``,
Dataflow through its API (needs ``apache-beam[gcp]`` and credentials).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading

from schemas.claim import Job

# Beam's terminal job states (Job API names; Dataflow's carry a JOB_STATE_ prefix).
TERMINAL = frozenset({"DONE", "FAILED", "CANCELLED", "UPDATED", "DRAINED"})
ASK_TIMEOUT_S = 10.0
# Beam's default --dataflow_endpoint: a claim records the endpoint only when it is another.
DATAFLOW_ENDPOINT = "https://dataflow.googleapis.com"


def this_process() -> dict:
    """The launching process's identity, as the claim records it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "boot_id": _boot_id(),
            "pid_namespace": _pid_namespace(), "pid_started": _start_ticks(os.getpid()) or 0}


def launcher_alive(*, boot_id: str, pid_namespace: str, pid: int, pid_started: int) -> bool | None:
    """Whether that process still runs; None when this process cannot see it (another machine
    or container, or no ``/proc``)."""
    if not boot_id or boot_id != _boot_id() or pid_namespace != _pid_namespace():
        return None
    started = _start_ticks(pid)
    return started is not None and (not pid_started or started == pid_started)


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")  # e.g. pid:[4026531836]
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """The start time of a live process ``pid`` (None: none, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])  # state; starttime (field 22)


def submitted_job(result, beam_args: list[str]) -> Job | None:
    """The job ``result`` (``Pipeline.run()``'s) names; None when it runs in the launcher."""
    from apache_beam.options.pipeline_options import (
        GoogleCloudOptions,
        PipelineOptions,
        PortableOptions,
    )

    from pipeline.launch.beam_options import is_direct_runner

    if is_direct_runner(beam_args):  # FnApiRunner, or a Prism it started itself
        return None
    options = PipelineOptions(beam_args)
    if callable(getattr(result, "job_id", None)):  # DataflowPipelineResult
        # Where the job runs, as the service created it, else as Beam resolved it: without
        # --region, Beam fills it in (CLOUDSDK_COMPUTE_REGION, gcloud's config) on the options
        # it ran with, never on the command line re-read here.
        submitted = getattr(result, "_job", None)  # the Dataflow API's Job
        cloud = (getattr(result, "_options", None) or options).view_as(GoogleCloudOptions)
        endpoint = (cloud.dataflow_endpoint or "").strip()
        return Job(kind="dataflow", id=str(result.job_id()),
                   project=getattr(submitted, "project_id", "") or cloud.project or "",
                   region=getattr(submitted, "location", "") or cloud.region or "",
                   endpoint="" if endpoint.rstrip("/") == DATAFLOW_ENDPOINT else endpoint,
                   no_auth=bool(cloud.no_auth))
    job_id = getattr(result, "_job_id", None)  # portable_runner.PipelineResult
    if job_id is None:
        return None
    endpoint = options.view_as(PortableOptions).job_endpoint or ""
    if endpoint == "embed":  # the job service runs inside the launcher
        return None
    return Job(kind="portable", id=str(job_id), endpoint=endpoint)


def job_state(job: Job) -> tuple[str | None, str]:
    """(the runner's name for the job's state, e.g. RUNNING or DONE; None when it cannot be
    asked, and then why)."""
    if job.kind == "portable":
        return _portable_state(job)
    if job.kind == "dataflow":
        return _dataflow_state(job)
    return None, f"this pilepack does not know how to ask a {job.kind} runner"


def is_terminal(state: str) -> bool:
    return state.removeprefix("JOB_STATE_") in TERMINAL


def _portable_state(job: Job) -> tuple[str | None, str]:
    if not job.endpoint:
        return None, ("its job service was started by its launcher (no --job_endpoint), so no "
                      "one can ask it")
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    with grpc.insecure_channel(job.endpoint) as channel:
        try:
            response = beam_job_api_pb2_grpc.JobServiceStub(channel).GetState(
                beam_job_api_pb2.GetJobStateRequest(job_id=job.id), timeout=ASK_TIMEOUT_S)
        except grpc.RpcError as err:
            return None, (f"its job service at {job.endpoint} did not say "
                          f"({err.code().name}: {(err.details() or '')[:120]})")
    return beam_job_api_pb2.JobState.Enum.Name(response.state), ""


def _dataflow_state(job: Job) -> tuple[str | None, str]:
    try:
        from google.cloud import dataflow_v1beta3
    except ImportError:
        return None, ("the Dataflow API client is not installed here "
                      "(pip install 'apache-beam[gcp]')")
    try:  # one bounded call: Beam's own client retries for many minutes
        found = _dataflow_client(job, dataflow_v1beta3).get_job(
            request=dataflow_v1beta3.GetJobRequest(project_id=job.project, job_id=job.id,
                                                   location=job.region),
            timeout=ASK_TIMEOUT_S, retry=None)
    except Exception as err:  # no credentials, no network, no such job: all "cannot say"
        where = f" at {job.endpoint}" if job.endpoint else ""
        console = (f"https://console.cloud.google.com/dataflow/jobs/{job.region}/{job.id}"
                   f"?project={job.project}")
        return None, (f"the Dataflow API{where} did not say whether job {job.id} (region "
                      f"{job.region or 'unknown'}, project {job.project or 'unknown'}) still runs "
                      f"({type(err).__name__}: {_first_line(err)}); check it in the console "
                      f"({console})")
    return found.current_state.name, ""


def _first_line(err: BaseException) -> str:
    return str(err).strip().split("\n", 1)[0][:160]


def _dataflow_client(job: Job, dataflow_v1beta3):
    """The Dataflow API client the job was submitted through: its ``--dataflow_endpoint`` (a
    local one over REST, as Beam's own client), without credentials under ``--no_auth``."""
    import re

    from google.api_core import client_options
    from google.auth.credentials import AnonymousCredentials

    options, transport = None, None
    if job.endpoint:
        endpoint = job.endpoint
        if "localhost" in endpoint or "sandbox" in endpoint:
            transport = "rest"
        else:
            endpoint = re.sub("^https?://", "", endpoint)
        options = client_options.ClientOptions(api_endpoint=endpoint.rstrip("/"))
    return dataflow_v1beta3.JobsV1Beta3Client(
        credentials=AnonymousCredentials() if job.no_auth else None,
        client_options=options, transport=transport)


def cancel_hint(job: Job) -> str:
    """How a person cancels ``job``."""
    if job.kind == "dataflow":
        project = f" --project {job.project}" if job.project else ""
        region = job.region or "REGION (the job's, as the Dataflow console shows it)"
        return f"gcloud dataflow jobs cancel {job.id} --region {region}{project}"
    where = f" at {job.endpoint}" if job.endpoint else ""
    return (f"cancel job {job.id} through its job service{where} (the Job API's Cancel; on "
            "Flink: the web UI or `flink cancel`, on Spark: the Spark UI)")


def cancel(result) -> str:
    """Cancel a submitted job (an interrupted launcher); its state after, or why unknown."""
    try:
        result.cancel()
    except Exception as err:  # the runner's own error: report it, the caller exits anyway
        return f"cancelling failed ({type(err).__name__}: {str(err)[:120]})"
    with contextlib.suppress(Exception):
        return str(result.state)
    return "cancel requested"


@contextlib.contextmanager
def sigterm_interrupts():
    """Within: SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so the launcher can cancel its
    job and keep or release its claim before it exits (the default SIGTERM exits at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
