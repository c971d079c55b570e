"""The profile report's diagnosis: figures of a run (``summarize``) and rules over them (``RULES``).

Each rule compares one figure with one threshold and, when it holds, says what it means and
what to change; a finding names the figure, its value and the threshold, e.g.

    input-bound: 38% of step time waiting on data — raise the number of parallel reads ...
        [input_wait_fraction 0.38 >= 0.2]

Figures come from the steps after the first ``skip_first_steps`` of each training process
(which compile and warm up) and from the system samples taken while those steps ran.
docs/observability.md explains every rule; change a threshold here and there together.
"""

from __future__ import annotations

import dataclasses
import operator
import statistics

OUTLIER_FACTOR = 3.0  # a step this many times the median step time is an outlier
MIN_STEPS_FOR_OUTLIERS = 5


@dataclasses.dataclass(frozen=True)
class Rule:
    """``name`` holds when ``figure op threshold``; ``advice`` is formatted with the figures
    (and ``value``, the figure's value). A figure that is None (no data) is not judged."""

    name: str
    figure: str
    op: str
    threshold: float
    advice: str


RULES = (
    Rule("input-bound", "input_wait_fraction", ">=", 0.20,
         "{value:.0%} of step time waiting on data — raise the number of parallel reads (more, "
         "smaller shards) or move shards closer (EFS/FSx, local disk)"),
    Rule("compute-bound", "input_wait_fraction", "<", 0.20,
         "{compute_fraction:.0%} of step time in the training step, {value:.0%} waiting on "
         "data — the input keeps up; a faster step needs --bf16, --xla or faster devices"),
    Rule("GPU under-utilized", "gpu_utilization_median", "<", 70.0,
         "median GPU utilization {value:.0f}% while training — the GPU waits on input, on the "
         "host launching kernels or on other workers: a larger per-GPU batch, --xla, and see "
         "input-bound"),
    Rule("step-time outliers", "step_time_max_over_median", ">=", OUTLIER_FACTOR,
         "steps {outlier_steps_text} took {value:.1f}x the median step time "
         "({step_time_median_s:.3f} s) at worst — look at what else ran then: another process, "
         "slow storage, a --profile_steps trace"),
    Rule("host memory near its limit", "host_memory_max_percent", ">=", 90.0,
         "host memory peaked at {value:.0f}% of its limit — lower --shuffle_buffer, or use a "
         "host (or container limit) with more memory before the out-of-memory killer steps in"),
    Rule("host CPU saturated", "host_cpu_median_percent", ">=", 90.0,
         "the host's cores were {value:.0f}% busy (median) — input parsing and the step's host "
         "work compete for them: more host cores per accelerator, or less work per record"),
)

_OPS = {">=": operator.ge, "<": operator.lt}


@dataclasses.dataclass(frozen=True)
class Finding:
    rule: Rule
    value: float
    message: str

    def __str__(self) -> str:
        rule = self.rule
        return f"{self.message} [{rule.figure} {self.value:.3g} {rule.op} {rule.threshold:g}]"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def step_seconds(row: dict) -> float:
    return row["input_s"] + row["compute_s"]


def summarize(steps: list[dict], samples: list[dict], *, skip_first_steps: int = 2) -> dict:
    """The figures the rules judge (None where there is no data), from ``profile/steps.jsonl``
    and ``profile/system.jsonl`` rows."""
    timed = [row for row in steps if row.get("n", 0) >= skip_first_steps]
    figures: dict = {"steps": len(steps), "steps_judged": len(timed)}
    total = sum(step_seconds(row) for row in timed)
    waited = sum(row["input_s"] for row in timed)
    figures["input_wait_fraction"] = waited / total if total > 0 else None
    figures["compute_fraction"] = 1 - waited / total if total > 0 else None
    times = [step_seconds(row) for row in timed]
    median = _median(times)
    figures["step_time_median_s"] = median
    figures["step_time_max_over_median"] = (
        max(times) / median if median and len(times) >= MIN_STEPS_FOR_OUTLIERS else None
    )
    outliers = [row["step"] for row in timed
                if median and step_seconds(row) >= OUTLIER_FACTOR * median]
    figures["outlier_steps"] = outliers
    more = f" and {len(outliers) - 10} more" if len(outliers) > 10 else ""
    figures["outlier_steps_text"] = ", ".join(str(step) for step in outliers[:10]) + more

    during = samples_during(timed, samples) or samples
    cpu = [statistics.fmean(row["cpu_percent"]) for row in during if row.get("cpu_percent")]
    figures["host_cpu_median_percent"] = _median(cpu)
    memory = [row["memory_percent"] for row in during]
    figures["host_memory_max_percent"] = max(memory) if memory else None
    gpu = [statistics.fmean(g["utilization_percent"] for g in row["gpus"])
           for row in during if row.get("gpus")]
    figures["gpu_utilization_median"] = _median(gpu)
    figures["sampler_cpu_fraction"] = sampler_cpu_fraction(samples)
    return figures


def samples_during(steps: list[dict], samples: list[dict]) -> list[dict]:
    """The samples taken between the start of the first of ``steps`` and the end of the last."""
    if not steps:
        return []
    start = min(row["time"] for row in steps)
    end = max(row["time"] + step_seconds(row) for row in steps)
    return [row for row in samples if start <= row["time"] <= end]


def sampler_cpu_fraction(samples: list[dict]) -> float | None:
    """The sampler thread's CPU time over the wall time it sampled (1.0 = one core), summed
    over the training processes that wrote ``samples`` (its CPU counter restarts in each)."""
    cpu = wall = 0.0
    previous = None
    for row in samples:
        if previous is not None and row["sampler_cpu_s"] >= previous["sampler_cpu_s"]:
            cpu += row["sampler_cpu_s"] - previous["sampler_cpu_s"]
            wall += row["time"] - previous["time"]
        previous = row
    return cpu / wall if wall > 0 else None


def diagnose(figures: dict, rules=RULES) -> list[Finding]:
    """The findings of the rules that hold, in the table's order."""
    findings = []
    for rule in rules:
        value = figures.get(rule.figure)
        if value is None or not _OPS[rule.op](value, rule.threshold):
            continue
        message = rule.advice.format(value=value, **figures)
        findings.append(Finding(rule=rule, value=value, message=f"{rule.name}: {message}"))
    return findings
