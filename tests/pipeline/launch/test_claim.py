"""claim.py and jobs.py: who holds --output, when a claim may be taken over, and that a takeover
is atomic (racing processes locally, racing threads on S3)."""

import concurrent.futures
import dataclasses
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import pytest

from common import compare_and_swap
from pipeline.launch import claim, jobs
from schemas.claim import Claim, Job, claim_path

STALE = {"pid_started": 0, "started_unix": 0.0}


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _holder(**changes) -> Claim:
    return dataclasses.replace(claim.new_claim(runner="DirectRunner"), run_id="holder", **changes)


def _write(out, holder: Claim) -> None:
    os.makedirs(out, exist_ok=True)
    with open(claim_path(str(out)), "wb") as handle:
        handle.write(holder.to_bytes())


def _current(out) -> Claim:
    return Claim.from_bytes(compare_and_swap.read(claim_path(str(out))).data)


# --- whose claim is live -------------------------------------------------------------------

def test_a_claim_records_this_process_beyond_host_and_pid():
    mine = claim.new_claim(runner="DirectRunner")
    assert mine.boot_id and mine.pid_namespace.startswith("pid:[") and mine.pid_started > 0
    assert len(mine.run_id) == 32 and mine.pid == os.getpid()
    assert claim.judge(mine)[0] is claim.Holder.LIVE


@pytest.mark.parametrize("changes, verdict, why", [
    ({"pid": os.getpid()}, "LIVE", "runs on this machine"),
    ({"pid_started": 1}, "GONE", "is gone"),  # our pid, another start: a reused pid
    ({"pid": 0, "pid_started": 0}, "GONE", "is gone"),
    ({"boot_id": "another-machine"}, "UNKNOWN", "another machine or container"),
    ({"pid_namespace": "pid:[1]"}, "UNKNOWN", "another machine or container"),
    ({"boot_id": "another-machine", "started_unix": 0.0}, "GONE", "h old"),
    ({"pid": 0, "pid_started": 0, "phase": "submitting"}, "UNKNOWN", "recorded no job id"),
])
def test_judge(changes, verdict, why):
    changes = {"pid": _dead_pid(), **changes} if changes.get("pid") == 0 else changes
    found, reason = claim.judge(_holder(**changes))
    assert found is claim.Holder[verdict] and why in reason, reason


@pytest.mark.parametrize("state, verdict", [("RUNNING", "LIVE"), ("STARTING", "LIVE"),
                                            ("DONE", "GONE"), ("CANCELLED", "GONE"),
                                            ("JOB_STATE_RUNNING", "LIVE"),
                                            ("JOB_STATE_FAILED", "GONE"), (None, "UNKNOWN")])
def test_a_submitted_job_outlives_its_launcher(monkeypatch, state, verdict):
    monkeypatch.setattr(jobs, "job_state", lambda job: (state, "the service did not say"))
    holder = _holder(pid=_dead_pid(), pid_started=0, phase="submitted",
                     job=Job(kind="portable", id="j1", endpoint="localhost:1"))
    assert claim.judge(holder)[0] is claim.Holder[verdict]


def test_an_unanswering_job_service_is_unknown_not_gone():
    state, why = jobs.job_state(Job(kind="portable", id="j1", endpoint="localhost:1"))
    assert state is None and "localhost:1 did not say (UNAVAILABLE" in why


# --- refusals and takeovers ------------------------------------------------------------------

def test_a_dataflow_job_that_cannot_be_checked_is_refused_saying_how_to_cancel(tmp_path):
    # Without apache-beam[gcp] the client does not import; with it, there are no credentials.
    out = tmp_path / "out"
    _write(out, _holder(pid=_dead_pid(), pid_started=0, phase="submitted", job=Job(
        kind="dataflow", id="2024-01-01_00_00_00-123", project="p", region="europe-west4")))
    with pytest.raises(claim.OutputClaimed) as refused:
        claim.claim(str(out))
    message = str(refused.value)
    assert "cannot be checked" in message
    assert "apache-beam[gcp]" in message or "the Dataflow API did not say" in message
    assert ("gcloud dataflow jobs cancel 2024-01-01_00_00_00-123 --region europe-west4 "
            "--project p") in message
    assert "--take_over_claim=holder" in message
    taken = claim.claim(str(out), take_over="holder")  # the escape hatch, naming this run
    assert _current(out).run_id == taken.run_id


def test_take_over_claim_needs_the_right_run_and_never_takes_a_live_job(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _write(out, _holder(boot_id="another-machine"))  # unknown: launched elsewhere
    with pytest.raises(claim.OutputClaimed, match="--take_over_claim=holder"):
        claim.claim(str(out), take_over="some-other-run")
    monkeypatch.setattr(jobs, "job_state", lambda job: ("RUNNING", ""))
    _write(out, _holder(boot_id="another-machine", job=Job(kind="portable", id="j1")))
    with pytest.raises(claim.OutputClaimed, match="is being written by run holder .* is RUNNING"):
        claim.claim(str(out), take_over="holder")
    assert _current(out).run_id == "holder"


def test_a_young_unreadable_claim_is_not_taken_over_an_old_one_is(tmp_path, caplog):
    out = tmp_path / "out"
    out.mkdir()
    path = claim_path(str(out))
    with open(path, "wb") as handle:
        handle.write(b'{"run_id": "cut sh')  # a claim being written, or cut short by a crash
    with pytest.raises(claim.OutputClaimed, match=r"unreadable and \d s old"):
        claim.claim(str(out))
    old = time.time() - claim.PARTIAL_GRACE_S - 60
    os.utime(path, (old, old))
    mine = claim.claim(str(out))
    assert _current(out).run_id == mine.run_id
    assert "taking over an unreadable claim" in caplog.text


def test_a_claim_read_while_it_is_created_is_read_again(tmp_path):
    """Without hard links a claim is created empty, then written (``O_EXCL``): a claim read
    in between is read again, and the run is refused by its holder, not as unreadable."""
    out = tmp_path / "out"
    out.mkdir()
    open(claim_path(str(out)), "xb").close()
    writer = threading.Timer(0.3, _write, (out, _holder(pid=os.getpid())))
    writer.start()
    try:
        with pytest.raises(claim.OutputClaimed, match="is being written by run holder"):
            claim.claim(str(out))
    finally:
        writer.join()


def test_release_never_removes_another_runs_claim(tmp_path):
    out = str(tmp_path / "out")
    first = claim.claim(out)
    claim.release(out, dataclasses.replace(first, run_id="not-the-holder"))
    assert _current(out).run_id == first.run_id
    claim.release(out, first)
    assert compare_and_swap.read(claim_path(out)) is None


def test_updates_refuse_once_another_run_holds_the_claim(tmp_path):
    out = str(tmp_path / "out")
    first = claim.claim(out)
    _write(out, _holder(pid=_dead_pid(), **STALE))
    with pytest.raises(claim.OutputClaimed, match="no longer claimed by this run"):
        claim.record_job(out, first, Job(kind="portable", id="j1"))


# --- two takeovers of one stale claim leave exactly one owner ---------------------------------

ROUNDS, RACERS = 4, 6


def _take(out: str, start: float):
    time.sleep(max(0.0, start - time.time()))
    try:
        return claim.claim(out).run_id
    except claim.OutputClaimed:
        return None


def _race(out: str, pool) -> None:
    start = time.time() + 0.5
    winners = [w for w in pool.map(_take, [out] * RACERS, [start] * RACERS) if w]
    assert len(winners) == 1, winners
    assert _current(out).run_id == winners[0]


def test_racing_takeovers_of_a_stale_local_claim_leave_one_owner(tmp_path):
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(RACERS, mp_context=context) as pool:
        for n in range(ROUNDS):
            out = str(tmp_path / f"out{n}")
            _write(out, _holder(pid=_dead_pid(), **STALE))
            _race(out, pool)


def test_racing_takeovers_of_a_stale_claim_without_hard_links_leave_one_owner(nolink_dir,
                                                                             tmp_path):
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(RACERS, mp_context=context) as pool:
        for n in range(ROUNDS):
            out = str(nolink_dir / tmp_path.name / f"out{n}")
            _write(out, _holder(pid=_dead_pid(), **STALE))
            _race(out, pool)


def test_racing_claims_of_a_new_output_without_hard_links_leave_one_owner(nolink_dir, tmp_path):
    """Without hard links a claim is created, then written: racers that read it half-written
    read it again, and are refused by the winner's claim, not by an unreadable one."""
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(RACERS, mp_context=context) as pool:
        for n in range(ROUNDS):
            out = str(nolink_dir / tmp_path.name / f"new{n}")
            start = time.time() + 0.5
            results = list(pool.map(_take_or_why, [out] * RACERS, [start] * RACERS))
            winners = [result for result in results if not result.startswith("refused")]
            assert len(winners) == 1 and _current(out).run_id == winners[0], results
            assert not [result for result in results if "unreadable" in result], results


def _take_or_why(out: str, start: float) -> str:
    time.sleep(max(0.0, start - time.time()))
    try:
        return claim.claim(out).run_id
    except claim.OutputClaimed as err:
        return f"refused: {err}"


def test_racing_takeovers_of_a_stale_s3_claim_leave_one_owner(s3):
    with concurrent.futures.ThreadPoolExecutor(RACERS) as pool:
        for n in range(ROUNDS):
            out = s3.url(f"out{n}")
            s3.put(f"out{n}/{claim.CLAIM_NAME}", _holder(pid=_dead_pid(), **STALE).to_bytes())
            _race(out, pool)


def test_sigterm_interrupts_only_within(tmp_path):
    import signal

    with pytest.raises(KeyboardInterrupt), jobs.sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is not None
    assert threading.current_thread() is threading.main_thread()


# --- one binding, several jobs in turn (tokenizer sample, pre-pass, main job) ---------------

PORTABLE = ["--runner=PortableRunner", "--job_endpoint=localhost:1"]


class _Result:
    """A submitted job as ``Pipeline.run()`` returns it; ``wait`` runs while it "runs"."""

    def __init__(self, job_id: str, wait):
        self._job_id, self._wait, self.state, self.cancelled = job_id, wait, "RUNNING", False

    def wait_until_finish(self):
        self._wait()
        self.state = "DONE"

    def cancel(self):
        self.cancelled, self.state = True, "CANCELLED"


class _Pipeline:
    def __init__(self, out, job_id: str, *, seen: list, wait=lambda: None):
        self.out, self.job_id, self.seen, self.wait = out, job_id, seen, wait
        self.result = None

    def run(self):
        self.seen.append(("submitting", _current(self.out)))
        self.result = _Result(self.job_id, lambda: self._running())
        return self.result

    def _running(self):
        self.seen.append(("running", _current(self.out)))
        self.wait()


def _binding(out, *, cancel: bool) -> claim.Binding:
    held = claim.claim(str(out), runner="PortableRunner")
    return claim.Binding(output=str(out), held=held, beam_args=PORTABLE,
                         cancel_on_interrupt=cancel)


def test_a_binding_records_each_job_in_turn_and_none_between(tmp_path):
    out, seen = tmp_path / "out", []
    binding = _binding(out, cancel=True)
    for job_id in ("sample", "prepass", "main"):
        result = binding.run(_Pipeline(out, job_id, seen=seen))
        assert result.state == "DONE" and binding.job.id == job_id
        between = _current(out)  # the launcher goes on: no ended job read as the run's end
        assert (between.phase, between.job, between.run_id) == ("preparing", None,
                                                                binding.held.run_id)
    assert [(what, c.phase, c.job.id if c.job else None) for what, c in seen] == [
        ("submitting", "submitting", None), ("running", "submitted", "sample"),
        ("submitting", "submitting", None), ("running", "submitted", "prepass"),
        ("submitting", "submitting", None), ("running", "submitted", "main")]
    assert seen[3][1].job == Job(kind="portable", id="prepass", endpoint="localhost:1")
    binding.release()
    assert compare_and_swap.read(claim_path(str(out))) is None


@pytest.mark.parametrize("cancel", [True, False])
def test_an_interrupt_during_a_later_job_binds_the_claim_to_that_job(tmp_path, cancel):
    out, seen = tmp_path / "out", []
    binding = _binding(out, cancel=cancel)
    first = _Pipeline(out, "sample", seen=seen)
    binding.run(first)

    def interrupted():
        raise KeyboardInterrupt

    second = _Pipeline(out, "prepass", seen=seen, wait=interrupted)
    with pytest.raises(KeyboardInterrupt):
        binding.run(second)
    assert not first.result.cancelled and second.result.cancelled is cancel
    assert _current(out).job.id == "prepass" and binding.may_still_run() is not cancel
    binding.release()
    left = compare_and_swap.read(claim_path(str(out)))
    if cancel:  # the job is over: the claim goes
        assert left is None
    else:  # the job runs on: the claim stays bound to it, and no next job starts
        assert Claim.from_bytes(left.data).job.id == "prepass"
        with pytest.raises(RuntimeError, match="previous job may still run"):
            binding.run(_Pipeline(out, "main", seen=seen))
        assert _current(out).job.id == "prepass"


def test_a_failed_job_keeps_the_claim_only_while_it_may_run(tmp_path):
    out = tmp_path / "out"
    binding = _binding(out, cancel=True)

    def fails():
        raise RuntimeError("the job failed")

    failing = _Pipeline(out, "prepass", seen=[], wait=fails)
    with pytest.raises(RuntimeError, match="the job failed"):
        binding.run(failing)
    assert _current(out).job.id == "prepass"
    failing.result.state = "FAILED"
    binding.release()
    assert compare_and_swap.read(claim_path(str(out))) is None


def test_claims_read_across_versions_of_the_job_record():
    """A claim written before the job recorded its Dataflow endpoint reads with the defaults;
    one from a newer writer with a job field this one does not know reads without it."""
    old = (b'{"run_id": "r", "host": "h", "pid": 1, "started": "2026-01-01T00:00:00", '
           b'"started_unix": 0, "job": {"kind": "dataflow", "id": "j", "project": "p", '
           b'"region": "europe-west4"}}')
    assert Claim.from_bytes(old).job == Job(kind="dataflow", id="j", project="p",
                                            region="europe-west4", endpoint="", no_auth=False)
    newer = old.replace(b'"region"', b'"zone": "europe-west4-a", "region"')
    assert Claim.from_bytes(newer).job == Claim.from_bytes(old).job
