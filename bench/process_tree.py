"""Run a command and watch its whole process tree: peak RSS summed over every process (encoder
processes and Beam workers included) and the tree's CPU seconds. Memory of the main process
alone misses the work its children do."""

from __future__ import annotations

import subprocess
import tempfile
import time

POLL_SECONDS = 0.02


def run_polled(argv: list[str], *, stderr=subprocess.STDOUT,
               also: tuple[int, ...] = ()) -> tuple[int, str, float, float, float]:
    """Run ``argv``; return (exit status, its output, peak RSS in MB summed over its process
    tree, the tree's CPU seconds, wall seconds). ``also``: pids of running processes whose
    trees count too (a job service and a worker pool that do a portable run's work)."""
    import psutil

    cpu: dict[int, float] = {}  # last CPU seconds seen of each process of the tree
    started = time.monotonic()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(argv, stdout=log, stderr=stderr)
        roots, peak = [psutil.Process(pid) for pid in (process.pid, *also)], 0
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
            peak = max(peak, total)
            time.sleep(POLL_SECONDS)
        wall = time.monotonic() - started
        log.seek(0)
        output = log.read().decode(errors="replace")
    return process.returncode, output, peak / 1e6, sum(cpu.values()), wall
