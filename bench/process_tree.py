"""Run a command and watch its whole process tree: peak RSS summed over every process (encoder
processes and Beam workers included) and the tree's CPU seconds. Memory of the main process
alone misses the work its children do."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time

POLL_SECONDS = 0.02


def run_polled(argv: list[str], *, stderr=subprocess.STDOUT,
               also: tuple[int, ...] = ()) -> tuple[int, str, float, float, float]:
    """Run ``argv``; return (exit status, its output, peak RSS in MB summed over its process
    tree, the tree's CPU seconds, wall seconds). ``also``: pids of running processes whose
    trees count too (a job service and a worker pool that do a portable run's work)."""
    status, output, peaks, _, cpu, wall = run_phases(argv, markers=(), stderr=stderr, also=also)
    return status, output, peaks[0], cpu, wall


def run_phases(argv: list[str], *, markers: tuple[str, ...], stderr=subprocess.STDOUT,
               also: tuple[int, ...] = ()) -> tuple[int, str, list[float], list[float], float, float]:
    """``run_polled`` with the peak split into phases: phase 0 lasts until ``markers[0]``
    appears in the output, phase 1 until ``markers[1]`` does after it, and so on; returns the
    peaks (MB) of the ``len(markers) + 1`` phases in place of the one peak, then each phase's
    first sample (MB: what the phase before left; 0 for a phase never reached)."""
    import psutil

    cpu: dict[int, float] = {}  # last CPU seconds seen of each process of the tree
    peaks, phase, seen, at = [0] * (len(markers) + 1), 0, b"", 0
    starts: list[int | None] = [None] * (len(markers) + 1)
    started = time.monotonic()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(argv, stdout=log, stderr=stderr)
        roots = [psutil.Process(pid) for pid in (process.pid, *also)]
        while process.poll() is None:
            total = 0
            try:
                tree = [p for root in roots for p in (root, *root.children(recursive=True))]
            except psutil.NoSuchProcess:
                break
            for proc in tree:
                try:
                    with proc.oneshot():
                        total += proc.memory_info().rss
                        times = proc.cpu_times()
                    cpu[proc.pid] = times.user + times.system
                except psutil.NoSuchProcess:  # ended between listing and reading
                    pass
            peaks[phase] = max(peaks[phase], total)
            starts[phase] = total if starts[phase] is None else starts[phase]
            if phase < len(markers):  # pread: the child shares the file's offset
                seen += os.pread(log.fileno(), 1 << 20, len(seen))
                while phase < len(markers) and seen.find(markers[phase].encode(), at) >= 0:
                    at = seen.find(markers[phase].encode(), at) + len(markers[phase])
                    phase += 1
            time.sleep(POLL_SECONDS)
        wall = time.monotonic() - started
        log.seek(0)
        output = log.read().decode(errors="replace")
    return (process.returncode, output, [peak / 1e6 for peak in peaks],
            [(start or 0) / 1e6 for start in starts], sum(cpu.values()), wall)
