"""A stand-in for the Dataflow service on this machine: the Dataflow v1b3 REST endpoints that
Apache Beam's ``DataflowRunner`` calls, for the launcher's side of a Dataflow run.

Beam's ``DataflowRunner`` stages the job's files under ``--temp_location`` (here: the GCS
emulator, ``tests/conftest.py``) and then talks to ``--dataflow_endpoint``; an endpoint naming
``localhost`` gets the REST transport, and ``--no_auth`` no credentials. This server answers
``projects.locations.jobs.create`` with the job and a new id (``standin-1``, ``standin-2``, ...)
in ``JOB_STATE_RUNNING``, ``get`` with its current state, ``update`` (a cancel) by setting it,
and a job's messages and metrics with none. Nothing runs the job: a test moves it to the state
it needs (``set_state``), having written what its workers would have, if anything; ``failing``
makes it answer every request with an error status, ``add_job`` adds a job no launcher submitted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_JOBS = re.compile(r"^/v1b3/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/jobs"
                   r"(?:/(?P<id>[^/?:]+)(?P<sub>/messages|/metrics)?)?(?:\?.*)?$")
_STATES = ("JOB_STATE_UNKNOWN", "JOB_STATE_STOPPED", "JOB_STATE_RUNNING", "JOB_STATE_DONE",
           "JOB_STATE_FAILED", "JOB_STATE_CANCELLED")  # the API's enum, in its numbering


@dataclasses.dataclass
class Request:
    method: str
    path: str
    body: dict | None


class DataflowStandIn:
    """The service's state: every request seen, and the jobs created."""

    def __init__(self):
        self.requests: list[Request] = []
        self.jobs: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.endpoint = ""  # http://localhost:PORT once serving
        self.launchers: list = []  # processes a test started against it, to stop at the end
        self.failing: int | None = None  # an HTTP status to answer every request with

    def add_job(self, job_id: str, *, project: str, region: str, state: str) -> None:
        """A job as if a launcher had submitted it (for a claim a test writes itself)."""
        with self._lock:
            self.jobs[job_id] = {"id": job_id, "projectId": project, "location": region,
                                 "currentState": state}

    def set_state(self, job_id: str, state: str) -> None:
        with self._lock:
            self.jobs[job_id]["currentState"] = state

    def wait_for_job(self, count: int, *, timeout: float = 120.0) -> dict:
        """The ``count``-th job created (1-based), once it is."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.jobs) >= count:
                    return self.jobs[f"standin-{count}"]
            time.sleep(0.05)
        raise TimeoutError(f"no job {count} submitted in {timeout:.0f} s")

    def seen(self, method: str, job_id: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.method == method
                    and (m := _JOBS.match(r.path)) and m["id"] == job_id]

    def handle(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(Request(method, path, body))
            if self.failing is not None:
                return self.failing, {"error": {"code": self.failing,
                                                "message": "the stand-in answers an error"}}
            match = _JOBS.match(path)
            if match is None:
                return 404, {"error": {"code": 404, "message": f"not served here: {path}"}}
            if match["id"] is None and method == "POST":  # create
                job_id = f"standin-{len(self.jobs) + 1}"
                self.jobs[job_id] = {**(body or {}), "id": job_id,
                                     "projectId": match["project"],
                                     "location": match["region"],
                                     "currentState": "JOB_STATE_RUNNING"}
                return 200, self.jobs[job_id]
            job = self.jobs.get(match["id"] or "")
            if job is None:
                return 404, {"error": {"code": 404, "message": f"no job {match['id']}"}}
            if match["sub"] == "/messages":
                return 200, {"jobMessages": []}
            if match["sub"] == "/metrics":
                return 200, {"metrics": []}
            if method == "PUT":  # update: Beam's cancel asks for JOB_STATE_CANCELLED
                requested = (body or {}).get("requestedState", "JOB_STATE_CANCELLED")
                job["currentState"] = (_STATES[requested] if isinstance(requested, int)
                                       else requested)
            return 200, job


def _handler(service: DataflowStandIn):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: the test reads service.requests
            pass

        def _answer(self, method: str) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size)) if size else None
            status, doc = service.handle(method, self.path, body)
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._answer("GET")

        def do_POST(self):
            self._answer("POST")

        def do_PUT(self):
            self._answer("PUT")

    return Handler


@contextlib.contextmanager
def dataflow_standin() -> Iterator[DataflowStandIn]:
    """Serve a ``DataflowStandIn`` on a free loopback port (``endpoint``) while within."""
    service = DataflowStandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    service.endpoint = f"http://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
