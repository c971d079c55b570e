"""The profile report's PNG charts (matplotlib, no display needed: ``Figure`` renders with Agg).

Every chart is a function of the rows of ``profile/steps.jsonl`` and ``profile/system.jsonl``
returning PNG bytes; time runs in seconds from ``t0`` (``origin``: the first row of either).
docs/observability.md shows how to read each one.
"""

from __future__ import annotations

import io
import statistics

import matplotlib

matplotlib.use("Agg")  # before anything draws: no display, in any process

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from trainer.observe.diagnose import OUTLIER_FACTOR, step_seconds

MAX_BARS = 600  # more steps than this are drawn as bins of consecutive steps
MAX_NOTES = 5  # bars cut at the top of a chart that get their height written on them
INPUT_COLOR, COMPUTE_COLOR = "#e6862f", "#3b75af"
GIB, MIB = 1 << 30, 1 << 20


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _legend(ax) -> None:
    """Beside the panel, where it hides no line."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def origin(steps: list[dict], samples: list[dict]) -> float:
    """The Unix time the charts' clocks start at: the first row of either file."""
    times = [row["time"] for row in steps[:1] + samples[:1]]
    return min(times) if times else 0.0


def _bins(steps: list[dict]) -> list[list[dict]]:
    size = max(1, -(-len(steps) // MAX_BARS))
    return [steps[i : i + size] for i in range(0, len(steps), size)]


def _y_limit(steps: list[dict], skip_first_steps: int) -> float | None:
    """Room for the steady steps: the first ones (compilation) would flatten the rest."""
    steady = [step_seconds(row) for row in steps if row.get("n", 0) >= skip_first_steps]
    return max(steady) * 1.15 if steady else None


def _stacked_bars(ax, bars, top) -> None:
    """``bars``: (x, width, input s, compute s); bars above ``top`` are cut, their height noted."""
    for x, width, waited, computed in bars:
        ax.bar(x, waited, width=width, align="edge", color=INPUT_COLOR, linewidth=0)
        ax.bar(x, computed, bottom=waited, width=width, align="edge", color=COMPUTE_COLOR,
               linewidth=0)
    if not top:
        return
    ax.set_ylim(0, top)
    cut = sorted((b for b in bars if b[2] + b[3] > top), key=lambda b: -(b[2] + b[3]))
    for x, width, waited, computed in cut[:MAX_NOTES]:
        total = waited + computed
        ax.annotate(f"{total:.2g} s, {waited / total:.0%} input", (x + width / 2, top),
                    xytext=(0, -10), textcoords="offset points", ha="center", fontsize=7,
                    color="white", bbox={"boxstyle": "round", "fc": "#444444", "lw": 0})


def _draw_steps_over_time(ax, steps, t0, skip_first_steps):
    bars = []
    for group in _bins(steps):
        width = group[-1]["time"] + step_seconds(group[-1]) - group[0]["time"]
        bars.append((group[0]["time"] - t0, width,
                     statistics.fmean(row["input_s"] for row in group),
                     statistics.fmean(row["compute_s"] for row in group)))
    _stacked_bars(ax, bars, _y_limit(steps, skip_first_steps))
    ax.set_ylabel("s per step")
    ax.set_title("step time: waiting for input (orange), computing (blue)", fontsize=10)


def _draw_cpu(ax, samples, t0):
    x = [row["time"] - t0 for row in samples]
    per_core = [row["cpu_percent"] or [0.0] for row in samples]
    ax.fill_between(x, [min(c) for c in per_core], [max(c) for c in per_core], alpha=0.25,
                    color="#888888", label="least to most busy core", linewidth=0)
    ax.plot(x, [statistics.fmean(c) for c in per_core], color="black", label="mean of cores")
    ax.plot(x, [row["process_cpu_percent"] / max(len(c), 1) for row, c in zip(samples, per_core)],
            color=COMPUTE_COLOR, label="training process")
    ax.set_ylim(0, 105)
    ax.set_ylabel("CPU %")
    _legend(ax)
    ax.set_title("host CPU", fontsize=10)


def _gpu_series(samples):
    count = max((len(row.get("gpus", [])) for row in samples), default=0)
    series = []
    for index in range(count):
        rows = [(row["time"], gpu) for row in samples for gpu in row.get("gpus", [])
                if gpu["index"] == index]
        series.append((index, rows))
    return series


def _draw_gpu(ax, samples, t0):
    series = _gpu_series(samples)
    if not series:
        ax.text(0.5, 0.5, "no GPU sampled (NVML found none)", ha="center", va="center",
                transform=ax.transAxes, color="#666666")
        ax.set_yticks([])
    for index, rows in series:
        x = [time - t0 for time, _ in rows]
        busy = [gpu["utilization_percent"] for _, gpu in rows]
        line = ax.plot(x, busy, label=f"GPU {index} busy")
        ax.plot(x, [100 * gpu["memory_used_bytes"] / gpu["memory_total_bytes"] for _, gpu in rows],
                linestyle="--", color=line[0].get_color(), label=f"GPU {index} memory")
    if series:
        ax.set_ylim(0, 105)
        _legend(ax)
    ax.set_ylabel("GPU %")
    ax.set_title("GPU utilization (solid) and memory used (dashed)", fontsize=10)


def _draw_memory(ax, samples, t0):
    x = [row["time"] - t0 for row in samples]
    ax.plot(x, [row["memory_used_bytes"] / GIB for row in samples], color="black", label="used")
    ax.plot(x, [row["memory_limit_bytes"] / GIB for row in samples], color="#c0392b",
            linestyle="--", label="limit")
    ax.plot(x, [row["process_rss_bytes"] / GIB for row in samples], color=COMPUTE_COLOR,
            label="training process")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("GiB")
    _legend(ax)
    ax.set_title("host memory", fontsize=10)


def _draw_io(ax, samples, t0, names):
    x = [row["time"] - t0 for row in samples]
    for key, label in names:
        ax.plot(x, [row[key] / MIB for row in samples], label=label)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("MiB/s")
    _legend(ax)


DISK = (("disk_read_bytes_per_s", "disk read"), ("disk_write_bytes_per_s", "disk write"))
NET = (("net_recv_bytes_per_s", "network in"), ("net_sent_bytes_per_s", "network out"))


def timeline(steps, samples, *, t0: float, skip_first_steps: int) -> bytes:
    """The overview on one clock: step time split, CPU, GPU (when sampled), memory, I/O."""
    panels = [_draw_cpu, *([_draw_gpu] if _gpu_series(samples) else []), _draw_memory]
    figure = _figure(11, 2.4 * (len(panels) + 2))
    axes = figure.subplots(len(panels) + 2, 1, sharex=True)
    _draw_steps_over_time(axes[0], steps, t0, skip_first_steps)
    for ax, draw in zip(axes[1:], panels):
        draw(ax, samples, t0)
    _draw_io(axes[-1], samples, t0, DISK + NET)
    axes[-1].set_title("disk and network", fontsize=10)
    axes[-1].set_xlabel("seconds since the run started")
    return _png(figure)


def step_split(steps, *, skip_first_steps: int) -> bytes:
    """Per step: input wait and compute stacked, outliers marked, the wait share alongside."""
    figure = _figure(11, 4.5)
    ax = figure.subplots()
    steady = [step_seconds(row) for row in steps if row.get("n", 0) >= skip_first_steps]
    median = statistics.median(steady) if steady else None
    bars = [(group[0]["step"], group[-1]["step"] - group[0]["step"] + 1,
             statistics.fmean(row["input_s"] for row in group),
             statistics.fmean(row["compute_s"] for row in group)) for group in _bins(steps)]
    top = _y_limit(steps, skip_first_steps)
    if top and median:  # room for the outlier threshold
        top = max(top, OUTLIER_FACTOR * median * 1.1)
    _stacked_bars(ax, bars, top)
    if median:
        ax.axhline(OUTLIER_FACTOR * median, color="#c0392b", linestyle=":", linewidth=1,
                   label=f"outlier threshold ({OUTLIER_FACTOR:g}x median)")
        outliers = [row for row in steps if row.get("n", 0) >= skip_first_steps
                    and step_seconds(row) >= OUTLIER_FACTOR * median]
        ax.plot([row["step"] + 0.5 for row in outliers],
                [min(step_seconds(row), top or step_seconds(row)) for row in outliers],
                "v", color="#c0392b", label="outlier step")
        ax.legend(loc="upper center", fontsize=7)
    ax.set_xlabel("global step")
    ax.set_ylabel("s per step")
    share = ax.twinx()
    share.plot([row["step"] + 0.5 for row in steps],
               [100 * row["input_s"] / max(step_seconds(row), 1e-9) for row in steps],
               color="black", linewidth=0.6, alpha=0.6)
    share.set_ylim(0, 105)
    share.set_ylabel("input wait, % of the step (black line)")
    ax.set_title("step time: waiting for input (orange) and computing (blue)", fontsize=10)
    return _png(figure)


def cpu(samples, *, t0: float) -> bytes:
    """Every core over time (a heat map), and the CPU the training process used."""
    figure = _figure(11, 6)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    cores = max((len(row["cpu_percent"]) for row in samples), default=0)
    if samples and cores:
        # A sample's percentages cover the interval since the one before it.
        times = [row["time"] - t0 for row in samples]
        edges = [times[0] - (times[1] - times[0] if len(times) > 1 else 1.0), *times]
        grid = [[row["cpu_percent"][c] if c < len(row["cpu_percent"]) else 0.0 for row in samples]
                for c in range(cores)]
        mesh = top.pcolormesh(edges, [c - 0.5 for c in range(cores + 1)], grid, cmap="viridis",
                              vmin=0, vmax=100)
        figure.colorbar(mesh, ax=[top, bottom], label="busy %", shrink=0.6)
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_ylabel("core")
    top.set_title("host CPU: every core", fontsize=10)
    _draw_cpu(bottom, samples, t0)
    bottom.set_xlabel("seconds since the run started")
    return _png(figure)


def gpu(samples, *, t0: float) -> bytes:
    figure = _figure(11, 3.5)
    ax = figure.subplots()
    _draw_gpu(ax, samples, t0)
    ax.set_xlabel("seconds since the run started")
    return _png(figure)


def memory(samples, *, t0: float) -> bytes:
    figure = _figure(11, 3.5)
    ax = figure.subplots()
    _draw_memory(ax, samples, t0)
    ax.set_xlabel("seconds since the run started")
    return _png(figure)


def disk_and_network(samples, *, t0: float) -> bytes:
    figure = _figure(11, 5.5)
    disk_ax, net_ax = figure.subplots(2, 1, sharex=True)
    _draw_io(disk_ax, samples, t0, DISK)
    disk_ax.set_title("disk", fontsize=10)
    _draw_io(net_ax, samples, t0, NET)
    net_ax.set_title("network", fontsize=10)
    net_ax.set_xlabel("seconds since the run started")
    return _png(figure)
