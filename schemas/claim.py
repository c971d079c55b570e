"""The output claim: ``.pilepack-claim.json`` in ``--output`` names the one run writing there.

The launcher creates and updates it (``pipeline.launch.claim``); the manifest commit, on a
worker, reads it (``check_held``) and refuses to commit for a run it no longer names, so a job
left running by an interrupted launcher cannot commit over the run that took ``--output`` over;
so does every other file a job's workers commit there (``Fence``), so such a job writes nothing
into the new run's output either.
"""

from __future__ import annotations

import dataclasses
import functools
import json

from common import storage
from common.errors import PilepackError

CLAIM_NAME = ".pilepack-claim.json"


class ClaimLost(PilepackError):
    """This run no longer holds ``--output``'s claim: a newer run has taken the output over."""


@dataclasses.dataclass(frozen=True)
class Job:
    """A job that runs apart from its launcher (``pipeline.launch.jobs``)."""

    kind: str  # "portable" (the Job API) or "dataflow"
    id: str
    # portable: the job service's host:port ("": started by the launcher); dataflow:
    # --dataflow_endpoint when not Dataflow's own ("": the default)
    endpoint: str = ""
    project: str = ""  # dataflow
    region: str = ""  # dataflow
    no_auth: bool = False  # dataflow: --no_auth, so its state is asked without credentials


@dataclasses.dataclass(frozen=True)
class Claim:
    """Who holds ``--output``: the run, its launching process, and its job once submitted."""

    run_id: str  # random, per run: the manifest's run_id
    host: str  # for people: host names repeat across containers (SageMaker: algo-1)
    pid: int
    started: str  # ISO 8601, UTC
    started_unix: float
    boot_id: str = ""  # the launcher's machine, this boot ("": unknown)
    pid_namespace: str = ""  # its pid namespace: every container has its own
    pid_started: int = 0  # its process start, in clock ticks since boot: pids are reused
    runner: str = ""  # --runner
    phase: str = "preparing"  # preparing -> submitting -> submitted, back to preparing per job
    job: Job | None = None  # recorded once submitted; None: the job runs in the launcher

    def to_bytes(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Claim | None":
        """The claim in ``data``; None when it is not one (cut short, or not JSON)."""
        try:
            doc = json.loads(data)
            fields = {f.name for f in dataclasses.fields(cls)}
            doc = {k: v for k, v in doc.items() if k in fields}  # newer writers may add some
            job = doc.pop("job", None)
            if job:  # a newer writer's job fields too
                known = {f.name for f in dataclasses.fields(Job)}
                job = {k: v for k, v in job.items() if k in known}
            return cls(**doc, job=Job(**job) if job else None)
        except (ValueError, TypeError, AttributeError):
            return None

    def describe(self) -> str:
        job = f", {self.job.kind} job {self.job.id}" if self.job else ""
        return f"run {self.run_id} (host {self.host}, pid {self.pid}, started {self.started}{job})"


def claim_path(output: str) -> str:
    return storage.join(output, CLAIM_NAME)


def check_held(output: str, *, run_id: str, what: str = "its manifest") -> None:
    """Raise ClaimLost unless ``output``'s claim still names ``run_id`` (``what``: the file
    about to be committed, for the message)."""
    # Who holds it is all this needs, not the version: one plain read (one GET on an object
    # store), as this runs before every file a job commits.
    fs, path = storage.filesystem(claim_path(output))
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        data = None
    holder = Claim.from_bytes(data) if data is not None else None
    if holder is not None and holder.run_id == run_id:
        return
    now = (f"is now claimed by {holder.describe()}, not by run {run_id} (this job)" if holder
           else f"is no longer claimed by run {run_id} (this job)")
    raise ClaimLost(
        f"{output} {now}: a newer run has taken the output over, so this job writes nothing "
        f"more there and stops before committing {what}. Nothing to fix in the newer run; this "
        "job was left running by an interrupted launcher: cancel it")


@dataclasses.dataclass(frozen=True)
class Fence:
    """Keeps a taken-over job out of ``output``: called just before each file a job's worker
    commits there (``common.storage.atomic_open``'s ``before_commit``), it raises ClaimLost
    once the claim names another run than ``run_id``. Its cost is one read of the claim (a few
    hundred bytes: a GET on an object store) per committed file: a part, a shard, a format's
    file, a dead-letter or hash file. A commit whose check passed just before a takeover may
    still land (the rename or upload that follows takes milliseconds): the new run's own files
    come later, so they replace it (the new run also removes the old run's leftovers first).

    ``run_id`` empty: no claim (a pipeline built without the launcher, in tests): no check.
    """

    output: str
    run_id: str = ""

    def for_file(self, path: str):
        """The ``before_commit`` check for committing ``path`` (None: no claim to check)."""
        return functools.partial(self.check, what=path) if self.run_id else None

    def check(self, *, what: str = "a file") -> None:
        if self.run_id:
            check_held(self.output, run_id=self.run_id, what=what)


NO_FENCE = Fence(output="")  # the default of writers built without a claimed run
