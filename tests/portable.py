"""Beam's portable protocol on this machine: the local stand-in for a Flink or Spark job server.

``portable_services()`` starts Apache Beam's own Python job service
(``apache_beam.runners.portability.local_job_service_main``) and its SDK worker pool
(``apache_beam.runners.worker.worker_pool_main``) as two processes on free loopback ports. A
pipeline run with ``services.beam_args`` goes to the job service over gRPC as a Runner API
proto (the Job API), and its DoFns are unpickled and run in worker processes that the pool
starts per job (the Fn API): the same path as on a Flink or Spark cluster, without one.

The pool starts each worker with the ``python`` found on ``PATH``, in its own working
directory, so both services get this interpreter's ``bin`` first on ``PATH`` and the
repository on ``PYTHONPATH`` (the workers import ``pipeline`` to unpickle the DoFns).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

from tests.conftest import free_port

REPO = pathlib.Path(__file__).resolve().parents[1]
# The command line the pool gives each SDK worker process it starts.
_WORKER_MARK = "SdkHarness"
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclasses.dataclass(frozen=True)
class PortableServices:
    """A running job service and worker pool (see ``portable_services``)."""

    job_endpoint: str  # host:port of the Job API (``--job_endpoint``)
    worker_endpoint: str  # host:port of the worker pool (``--environment_config``)
    job_pid: int
    pool_pid: int
    log_dir: pathlib.Path  # job.log and pool.log: the services' and workers' output

    @property
    def beam_args(self) -> list[str]:
        """The Beam flags that send a pipeline to these services."""
        return ["--runner=PortableRunner", f"--job_endpoint={self.job_endpoint}",
                "--environment_type=EXTERNAL", f"--environment_config={self.worker_endpoint}"]

    def logs(self) -> str:
        """Both services' output so far (for assertion messages)."""
        return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")
                         for p in sorted(self.log_dir.glob("*.log")))


def service_env(extra: dict | None = None) -> dict:
    """This interpreter's ``bin`` first on PATH, the repository on PYTHONPATH."""
    env = dict(os.environ)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(filter(None, [bin_dir, env.get("PATH")]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def wait_for_port(port: int, *, process: subprocess.Popen, name: str, log: pathlib.Path,
                  timeout: float) -> None:
    """Block until ``localhost:port`` accepts a connection; fail if ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("localhost", port), 1):
            return
        if process.poll() is not None:
            raise RuntimeError(f"the {name} exited with {process.returncode} before listening "
                               f"on port {port}:\n{log.read_text(errors='replace')[-3000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {name} did not listen on port {port} within {timeout} s")
        time.sleep(0.1)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the process that started it dies (Linux), so
    a test process killed outright leaves no service behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _start(module: str, *args: str, log: pathlib.Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=log.parent, env=env, stdout=out,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
            start_new_session=True)  # its own process group: the pool's workers included


def stop_group(process: subprocess.Popen, *, grace: float = 5.0) -> None:
    """SIGTERM the process group of ``process``, then SIGKILL whatever is left of it (workers
    may outlive the pool)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def portable_services(log_dir: str | os.PathLike, *, env: dict | None = None,
                      timeout: float = 60.0) -> Iterator[PortableServices]:
    """Start the job service and the worker pool; yield them once both accept connections;
    stop both process groups (workers included) on the way out, whatever happened.

    Args:
      log_dir: an existing directory for ``job.log``, ``pool.log`` (and the services' and
        workers' working directory).
      env: extra environment for both services (and so for every worker).
      timeout: seconds each service gets to start listening.
    """
    log_dir = pathlib.Path(log_dir)
    environment = service_env(env)
    started: list[subprocess.Popen] = []
    try:
        job_port, pool_port = free_port(), free_port()
        job = _start("apache_beam.runners.portability.local_job_service_main",
                     f"--port={job_port}", log=log_dir / "job.log", env=environment)
        started.append(job)
        pool = _start("apache_beam.runners.worker.worker_pool_main",
                      f"--service_port={pool_port}", log=log_dir / "pool.log", env=environment)
        started.append(pool)
        wait_for_port(job_port, process=job, name="job service", log=log_dir / "job.log",
                      timeout=timeout)
        wait_for_port(pool_port, process=pool, name="worker pool", log=log_dir / "pool.log",
                      timeout=timeout)
        yield PortableServices(job_endpoint=f"localhost:{job_port}",
                               worker_endpoint=f"localhost:{pool_port}", job_pid=job.pid,
                               pool_pid=pool.pid, log_dir=log_dir)
    finally:
        for process in reversed(started):
            stop_group(process)


def worker_processes(services: PortableServices) -> list:
    """The SDK worker processes the pool has started and that still run (``psutil.Process``)."""
    import psutil

    try:
        children = psutil.Process(services.pool_pid).children()
    except psutil.NoSuchProcess:
        return []
    workers = []
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if child.status() != psutil.STATUS_ZOMBIE and any(
                    _WORKER_MARK in part for part in child.cmdline()):
                workers.append(child)
    return workers


def kill_workers(services: PortableServices, *, when: Callable[[], bool] = lambda: True,
                 wait: float = 120.0) -> list[int]:
    """SIGKILL every SDK worker process of the pool (and their children), as an out-of-memory
    kill would, as soon as ``when()`` holds (polled every 5 ms) and a worker exists, within
    ``wait`` seconds. Returns the pids of the workers killed."""
    import psutil

    deadline = time.monotonic() + wait
    while not when():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the moment to kill the workers did not come within {wait} s")
        time.sleep(0.005)
    # Listed now, not before: the pool starts a worker per job (an earlier job's may linger).
    while not (workers := worker_processes(services)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker pool started no worker within {wait} s")
        time.sleep(0.05)
    victims = []
    for worker in workers:
        with contextlib.suppress(psutil.NoSuchProcess):
            victims += [worker, *worker.children(recursive=True)]
    for victim in victims:
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.kill()
    gone_by = time.monotonic() + 10
    for victim in victims:  # gone, or a zombie: the pool reaps a worker only on StopWorker
        with contextlib.suppress(psutil.NoSuchProcess):
            while victim.status() != psutil.STATUS_ZOMBIE and time.monotonic() < gone_by:
                time.sleep(0.01)
    return [worker.pid for worker in workers]
