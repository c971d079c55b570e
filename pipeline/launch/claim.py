"""One run per ``--output``: a run claims the directory before it writes anything, and the
claim is bound to the job, not only to the process that launched it.

The claim (``schemas.claim``) is created exclusively and changed only by compare-and-swap
(``common.compare_and_swap``: ``link``/``flock`` locally and on EFS, conditional ``PUT``/``DELETE``
on S3). It names the run (a random id: the manifest's ``run_id``), the launching process
(``pipeline.launch.jobs``: boot id, pid namespace, pid and its start time) and, once submitted,
the job (its runner's job id). A run's jobs (the tokenizer's training sample, the quality
pre-pass, the main job) run one after another, each bound in turn (``Binding``); between them the
claim names no job, as the launcher works on. Another run reads it and:

- refuses while the holder may be writing: its launcher runs on this machine, or its job is not
  in a terminal state (the runner says so); ``--overwrite`` never replaces a running job;
- takes it over, with a warning, when the holder is provably gone: its launcher is dead and it
  had no job apart from it, or its job ended (DONE, FAILED, CANCELLED...); also a claim older
  than ``STALE_AFTER_HOURS`` whose launcher cannot be seen, and an unreadable (cut short) claim
  older than ``PARTIAL_GRACE_S`` (younger ones may still be being written);
- otherwise (a job whose state cannot be asked, a launcher stopped while submitting) refuses,
  saying how to cancel the job, and takes over only with ``--take_over_claim=RUN_ID``.

The manifest commit re-checks the claim on the worker (``schemas.claim.check_held``), so a job
whose claim was taken over cannot commit; and a run reports success only if the committed
manifest carries its own run id.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import time
import uuid

from common import compare_and_swap
from common.errors import PilepackError
from pipeline.launch import jobs
from schemas.claim import CLAIM_NAME, Claim, Job, claim_path

__all__ = ["CLAIM_NAME", "Binding", "Claim", "OutputClaimed", "STALE_AFTER_HOURS", "claim",
           "release"]

log = logging.getLogger(__name__)

STALE_AFTER_HOURS = 48.0  # longer than any run of one split should take
PARTIAL_GRACE_S = 600.0  # an unreadable claim younger than this may still be being written
_CREATING_S = 1.0  # an unreadable claim this young is read again: it is being written now
TAKE_OVER_FLAG = "--take_over_claim"


class OutputClaimed(PilepackError):
    """Another run holds --output (or replaced this run's dataset)."""


class Holder(enum.Enum):
    LIVE = "live"  # it may be writing: refuse
    GONE = "gone"  # provably not writing: take over
    UNKNOWN = "unknown"  # cannot tell: refuse unless --take_over_claim names it


def new_claim(*, runner: str) -> Claim:
    now = time.time()
    return Claim(run_id=uuid.uuid4().hex, runner=runner, **jobs.this_process(),
                 started=datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
                 .isoformat(timespec="seconds"), started_unix=now)


def judge(holder: Claim, *, now: float | None = None) -> tuple[Holder, str]:
    """Whether ``holder`` may still be writing its output, and why."""
    alive = jobs.launcher_alive(boot_id=holder.boot_id, pid_namespace=holder.pid_namespace,
                                pid=holder.pid, pid_started=holder.pid_started)
    if alive:
        return Holder.LIVE, f"its launcher (pid {holder.pid}) runs on this machine"
    if holder.job is not None:
        state, why = jobs.job_state(holder.job)
        if state is None:
            return Holder.UNKNOWN, f"the state of its job cannot be checked: {why}"
        if jobs.is_terminal(state):
            return Holder.GONE, f"its job {holder.job.id} is {state}"
        return Holder.LIVE, f"its job {holder.job.id} is {state}"
    if holder.phase == "submitting":
        return Holder.UNKNOWN, (f"its launcher was submitting a job to {holder.runner} and "
                                "recorded no job id (it stopped, or runs where this machine "
                                f"cannot see): look for a job started around {holder.started}")
    if alive is False:
        return Holder.GONE, f"its launcher (pid {holder.pid}) on this machine is gone"
    age_hours = ((now or time.time()) - holder.started_unix) / 3600
    if age_hours > STALE_AFTER_HOURS:
        return Holder.GONE, f"it is {age_hours:.0f} h old (> {STALE_AFTER_HOURS:.0f} h)"
    return Holder.UNKNOWN, (f"its launcher ran on another machine or container (host "
                            f"{holder.host}), where this one cannot see whether it still runs")


def claim(output: str, *, runner: str = "", take_over: str = "") -> Claim:
    """Claim ``output`` for a new run, taking over a provably stale claim (or the one
    ``take_over`` names); OutputClaimed while another run may be writing there."""
    path = claim_path(output)
    mine = new_claim(runner=runner)
    data = mine.to_bytes()
    for attempt in range(5):
        if compare_and_swap.create_exclusive(path, data):
            return mine
        current = compare_and_swap.read(path)
        if current is None:  # released meanwhile
            continue
        holder = Claim.from_bytes(current.data)
        if holder is None:
            age = time.time() - current.modified
            if age < _CREATING_S and attempt < 4:  # without hard links, written after creation
                time.sleep(_CREATING_S / 4)
                continue
            if age < PARTIAL_GRACE_S:
                raise OutputClaimed(
                    f"{path} is unreadable and {age:.0f} s old: a run may be writing it right "
                    f"now; rerun in {PARTIAL_GRACE_S / 60:.0f} minutes, when an unreadable claim "
                    "counts as the leftover of a crash")
            verdict, why = Holder.GONE, f"it is unreadable and {age / 60:.0f} minutes old"
            described = "an unreadable claim"
        else:
            verdict, why = judge(holder)
            described = f"the claim of {holder.describe()}"
            if verdict is Holder.UNKNOWN and take_over and take_over == holder.run_id:
                verdict, why = Holder.GONE, f"{why}; {TAKE_OVER_FLAG}={take_over} says it is over"
            _refuse_unless_gone(output, holder, verdict, why)
        if compare_and_swap.replace_if(path, data, version=current.version):
            log.warning("taking over %s on %s: %s", described, output, why)
            return mine
    raise OutputClaimed(f"{output}: could not claim it; other runs keep claiming it")


def _refuse_unless_gone(output: str, holder: Claim, verdict: Holder, why: str) -> None:
    if verdict is Holder.GONE:
        return
    cancel = f" To stop it: {jobs.cancel_hint(holder.job)}." if holder.job else ""
    if verdict is Holder.LIVE:
        raise OutputClaimed(
            f"{output} is being written by {holder.describe()}: {why}. Wait for it to finish "
            f"or choose another --output (--overwrite does not replace a running job).{cancel}")
    raise OutputClaimed(
        f"{output} is claimed by {holder.describe()}, and {why}.{cancel} Once you know that run "
        f"is over, rerun with {TAKE_OVER_FLAG}={holder.run_id}; or choose another --output")


def _update(output: str, held: Claim, **changes) -> Claim:
    """Replace this run's claim with ``changes`` applied; OutputClaimed if it is not ours."""
    path = claim_path(output)
    for _ in range(5):
        current = compare_and_swap.read(path)
        holder = Claim.from_bytes(current.data) if current else None
        if holder is None or holder.run_id != held.run_id:
            now = f"it is held by {holder.describe()}" if holder else "it has no claim"
            raise OutputClaimed(f"{output} is no longer claimed by this run ({held.run_id}): "
                                f"{now}; another run took it over, so this run stops")
        updated = dataclasses.replace(holder, **changes)
        if compare_and_swap.replace_if(path, updated.to_bytes(), version=current.version):
            return updated
    raise OutputClaimed(f"{output}: could not update this run's claim; it keeps changing")


def mark_submitting(output: str, held: Claim) -> Claim:
    """Before handing a pipeline to a runner: its job may outlive the launcher from now (an
    earlier job of this run, over, is no longer named)."""
    return _update(output, held, phase="submitting", job=None)


def record_job(output: str, held: Claim, job: Job | None) -> Claim:
    """Bind the claim to the submitted ``job`` (None: it runs in the launcher)."""
    return _update(output, held, phase="submitted", job=job)


def record_job_over(output: str, held: Claim) -> Claim:
    """The job ended and the launcher goes on (trains the tokenizer, starts the next job): the
    claim names no job, so a rerun does not read the ended job as the end of this run."""
    return _update(output, held, phase="preparing", job=None)


def release(output: str, held: Claim) -> None:
    """Remove the claim if it is still ``held``'s (never another run's)."""
    path = claim_path(output)
    for _ in range(5):
        current = compare_and_swap.read(path)
        holder = Claim.from_bytes(current.data) if current else None
        if holder is None or holder.run_id != held.run_id:
            return
        if compare_and_swap.delete_if(path, version=current.version):
            return


class Binding:
    """Runs a run's pipelines, one after another (the tokenizer's training sample, the quality
    pre-pass, the main job), with this run's claim bound to each job in turn: its id is recorded
    as soon as the runner returns it; an interrupted launcher (Ctrl-C, SIGTERM) cancels it when
    ``cancel_on_interrupt``; once it ends the claim names no job again; and the claim is released
    only once the current job cannot be running."""

    def __init__(self, *, output: str, held: Claim, beam_args: list[str],
                 cancel_on_interrupt: bool):
        self.output, self.held = output, held
        self._beam_args, self._cancel = beam_args, cancel_on_interrupt
        self._submitting = False
        self.result = None  # the current (latest) job's
        self.job: Job | None = None

    def run(self, p):
        """``p.run()`` then ``wait_until_finish()``; the result."""
        from pipeline.launch.beam_options import is_direct_runner

        if self.may_still_run():  # an internal invariant: run() returns once its job is over
            raise RuntimeError(f"{self.output}: this run's previous job may still run")
        self.result, self.job = None, None
        with jobs.sigterm_interrupts():
            if not is_direct_runner(self._beam_args):  # its job may outlive this process
                self.held = mark_submitting(self.output, self.held)
                self._submitting = True
            try:
                self.result = p.run()  # the DirectRunner runs the whole job here
            except Exception:  # not submitted: nothing runs
                self._submitting = False
                raise
            try:
                self._bind()
                self.result.wait_until_finish()
            except KeyboardInterrupt:
                self._interrupted()
                raise
        if self.job is not None and not self.may_still_run():
            self.held = record_job_over(self.output, self.held)
        return self.result

    def _bind(self) -> None:
        self.job = jobs.submitted_job(self.result, self._beam_args)
        self._submitting = False
        try:
            self.held = record_job(self.output, self.held, self.job)
        except OutputClaimed:  # taken over meanwhile: this job must not write
            jobs.cancel(self.result)
            raise

    def _interrupted(self) -> None:
        if self._submitting:  # interrupted before _bind: the job is known, not yet recorded
            self.job = jobs.submitted_job(self.result, self._beam_args)
            self._submitting = False
        if self.job is None:
            return
        if self._cancel:
            log.warning("interrupted: cancelling %s job %s: %s", self.job.kind, self.job.id,
                        jobs.cancel(self.result))
        else:
            log.warning("interrupted: %s job %s keeps running (--no-cancel_on_interrupt); %s "
                        "stays claimed by it until it ends. To stop it: %s", self.job.kind,
                        self.job.id, self.output, jobs.cancel_hint(self.job))

    def may_still_run(self) -> bool:
        """Whether this run's job may go on after the launcher: then its claim must stay."""
        if self._submitting:  # interrupted while submitting: a job may exist
            return True
        if self.job is None:
            return False
        try:
            return not jobs.is_terminal(str(self.result.state))
        except Exception:  # the runner cannot say: keep the claim, a rerun asks again
            return True

    def release(self) -> None:
        """Release the claim, unless the job may still be running."""
        if self.may_still_run():
            log.warning("%s stays claimed by %s until its job ends", self.output,
                        self.held.describe())
            return
        release(self.output, self.held)
