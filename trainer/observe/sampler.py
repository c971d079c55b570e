"""A background thread that samples the host and its GPUs into ``profile/system.jsonl``.

One row per sample (every ``interval_s``, 0.5 s in training), every figure since the previous
sample where it is a rate:

    {"time": 1767225600.5,                  # Unix seconds
     "cpu_percent": [97.0, 12.5, ...],      # per core, 0-100
     "process_cpu_percent": 180.0,          # the training process, 100 = one core
     "process_rss_bytes": 2147483648,
     "memory_used_bytes": ..., "memory_limit_bytes": ..., "memory_percent": 41.2,
     "disk_read_bytes_per_s": ..., "disk_write_bytes_per_s": ...,
     "net_recv_bytes_per_s": ..., "net_sent_bytes_per_s": ...,  # loopback left out
     "gpus": [{"index": 0, "utilization_percent": 93, "memory_used_bytes": ...,
               "memory_total_bytes": ...}],  # [] without an NVIDIA GPU and driver
     "sampler_cpu_s": 0.41}                 # CPU time the sampler thread has used so far

Host memory is the container's when its cgroup sets a limit below the machine's memory (what
the out-of-memory killer enforces; used = usage less inactive page cache), else the machine's
(used = total - available). The thread
is a daemon and each row is one ``write(2)`` (``jsonl``), so a killed run leaves a readable
file; ``stop`` takes a last sample and closes it.
"""

from __future__ import annotations

import logging
import threading
import time

import psutil

from trainer.observe.jsonl import JsonLinesWriter

log = logging.getLogger(__name__)

# (usage, limit, stat) files of the process's memory cgroup: v2, then v1.
CGROUP_MEMORY_FILES = (
    ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.stat"),
    ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
     "/sys/fs/cgroup/memory/memory.stat"),
)
# memory.stat's page cache the kernel drops first (v2, v1): not counted as used, as in the
# "working set" of docker stats and the kubelet; shards just read would fill the usage otherwise.
INACTIVE_FILE = ("inactive_file", "total_inactive_file")


class GpuProbe:
    """Utilization and memory of every NVIDIA GPU through NVML (nvidia-ml-py's ``pynvml``).

    Without the library, a driver or a GPU it probes nothing (``count == 0``). ``nvml``: a
    module with pynvml's functions (tests pass a stand-in).
    """

    def __init__(self, nvml=None):
        self._nvml, self._handles = None, []
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError:
                return
        try:
            nvml.nvmlInit()
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        except nvml.NVMLError as err:  # no driver, no GPU: a CPU host
            log.debug("NVML unavailable, no GPU metrics: %s", err)
            return
        self._nvml, self._handles = nvml, handles

    @property
    def count(self) -> int:
        return len(self._handles)

    def sample(self) -> list[dict]:
        rows = []
        for index, handle in enumerate(self._handles):
            try:
                utilization = self._nvml.nvmlDeviceGetUtilizationRates(handle)
                memory = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            except self._nvml.NVMLError as err:  # a GPU lost mid-run: record the others
                log.warning("GPU %d: NVML: %s", index, err)
                continue
            rows.append({
                "index": index,
                "utilization_percent": float(utilization.gpu),
                "memory_used_bytes": int(memory.used),
                "memory_total_bytes": int(memory.total),
            })
        return rows

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()
            self._nvml, self._handles = None, []


def io_counters() -> dict[str, int]:
    """Bytes read and written by the host's disks, and received and sent on its network
    interfaces other than loopback (traffic between processes of the host is not I/O)."""
    disk = psutil.disk_io_counters()  # None when no disk is visible (some containers)
    nics = psutil.net_io_counters(pernic=True)
    nics = [counters for name, counters in nics.items() if not name.startswith("lo")]
    return {
        "disk_read": disk.read_bytes if disk else 0,
        "disk_write": disk.write_bytes if disk else 0,
        "net_recv": sum(n.bytes_recv for n in nics),
        "net_sent": sum(n.bytes_sent for n in nics),
    }


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def cgroup_memory(files=CGROUP_MEMORY_FILES) -> tuple[int, int] | None:
    """(used, limit) bytes of this process's memory cgroup, or None when it has no limit;
    used = usage less inactive page cache."""
    for usage_file, limit_file, stat_file in files:
        try:
            limit, used = _read(limit_file).strip(), int(_read(usage_file))
        except (OSError, ValueError):
            continue
        if limit == "max":
            return None
        try:
            stat = dict(line.split() for line in _read(stat_file).splitlines() if line.strip())
        except (OSError, ValueError):
            stat = {}
        inactive = next((int(stat[key]) for key in INACTIVE_FILE if key in stat), 0)
        return max(used - inactive, 0), int(limit)
    return None


class SystemSampler:
    """Samples every ``interval_s`` seconds in a daemon thread, appending rows to ``path``."""

    def __init__(self, *, path: str, interval_s: float = 0.5, gpu: GpuProbe | None = None):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.path = path
        self.interval_s = interval_s
        self._gpu = gpu if gpu is not None else GpuProbe()
        self._process = psutil.Process()
        self._writer: JsonLinesWriter | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._last: tuple | None = None
        self.cpu_seconds = 0.0  # the sampler thread's CPU time, set when it stops

    def start(self) -> SystemSampler:
        self._writer = JsonLinesWriter(self.path)
        self._thread = threading.Thread(target=self._run, name="pilepack-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Take a last sample, end the thread, close the file (safe to call twice)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("the system sampler did not stop within %.0f s", timeout_s)
        self._thread = None
        self._writer.close()
        self._gpu.close()

    def _run(self) -> None:
        try:
            self.reset_counters()
            while not self._stop.wait(self.interval_s):
                self._writer.write(self.sample())
            self._writer.write(self.sample())  # the end of the run, however short
        except OSError as err:  # a full disk, a vanished /proc: training goes on without it
            log.warning("the system sampler stopped: %s", err)
        self.cpu_seconds = time.thread_time()

    def reset_counters(self) -> None:
        """Count rates and CPU percentages from now; in the thread that calls ``sample``
        (psutil keeps the system's CPU counters per thread)."""
        psutil.cpu_percent(percpu=True)
        self._process.cpu_percent()
        self._last = time.monotonic(), io_counters()

    def sample(self) -> dict:
        """One row (see the module docstring), from the thread that called ``reset_counters``."""
        now, counters = time.monotonic(), io_counters()
        then, before = self._last
        self._last = now, counters
        seconds = max(now - then, 1e-6)
        rates = {f"{name}_bytes_per_s": max(counters[name] - before[name], 0) / seconds
                 for name in counters}

        host = psutil.virtual_memory()
        used, limit = host.total - host.available, host.total
        limited = cgroup_memory()
        if limited is not None and limited[1] < host.total:
            used, limit = limited
        return {
            "time": time.time(),
            "cpu_percent": psutil.cpu_percent(percpu=True),
            "process_cpu_percent": self._process.cpu_percent(),
            "process_rss_bytes": self._process.memory_info().rss,
            "memory_used_bytes": used,
            "memory_limit_bytes": limit,
            "memory_percent": 100.0 * used / limit,
            **rates,
            "gpus": self._gpu.sample(),
            "sampler_cpu_s": time.thread_time(),
        }
