"""Charts and a diagnosis of where a training run's time went: ``python -m trainer.profile_report``.

    python -m trainer.profile_report --model_dir=runs/tiny [--output=DIR]

Reads ``MODEL_DIR/profile/steps.jsonl`` and ``system.jsonl`` (written by ``trainer.train``),
writes ``index.html``, its PNG charts and ``diagnosis.json`` to ``--output`` (default
``MODEL_DIR/profile/report/``), and prints the diagnosis: one line per rule that holds, naming
the figure, its value and the threshold (``trainer.observe.diagnose.RULES``). Local, mounted
or ``s3://`` directories. Exit status 0, or 2 with one ``error:`` line when there is no profile.
"""

from __future__ import annotations

import dataclasses
import html
import json
import sys

from common import cli, storage
from common.errors import InputError
from common.flags import ArgumentParser, add_flags, flag, from_args, require
from trainer.observe import charts, jsonl
from trainer.observe.diagnose import RULES, Finding, diagnose, summarize

REPORT_DIR = "report"  # under MODEL_DIR/profile/
PAGE = "index.html"
DIAGNOSIS = "diagnosis.json"


@dataclasses.dataclass(frozen=True)
class Chart:
    file: str
    title: str
    how_to_read: str


# The page shows them in this order; docs/observability.md explains each at more length.
CHARTS = (
    Chart("timeline.png", "Timeline",
          "Everything on one clock. Top: each step's time (a bar as wide as the step lasted, or "
          "as a group of consecutive steps on long runs), orange while the loop waited for the "
          "next batch, blue while the step computed; bars cut at the top (the first steps, which "
          "compile) carry their height. Below: host CPU, GPU, host memory, disk and network."),
    Chart("steps.png", "Step time by step",
          "Per global step: input wait (orange) under compute (blue); the black line is the input "
          "wait as a share of the step (right axis); red triangles mark outlier steps, above the "
          "dotted line at 3x the median step time."),
    Chart("cpu.png", "Host CPU",
          "Top: every core over time (yellow = busy). Bottom: the mean over cores (black), the "
          "range from the least to the most busy core (grey) and the training process (blue), in "
          "% of all cores."),
    Chart("gpu.png", "GPU",
          "Per GPU: utilization (solid: the share of time a kernel ran) and memory used (dashed), "
          "from NVML. TensorFlow reserves most GPU memory at start, so memory stays high."),
    Chart("memory.png", "Host memory",
          "Memory in use (black) against the limit (red, dashed: the container's cgroup limit "
          "when lower than the machine's memory) and the training process's resident memory "
          "(blue)."),
    Chart("io.png", "Disk and network",
          "Bytes per second read from and written to the host's disks, and received and sent on "
          "its network interfaces (shards streamed from S3 arrive as network traffic)."),
)


@dataclasses.dataclass(frozen=True)
class ReportFlags:
    model_dir: str = flag(help="the training run's directory (reads MODEL_DIR/profile/)")
    output: str = flag("", help="where to write index.html and the charts (empty: "
                                "MODEL_DIR/profile/report)")
    skip_first_steps: int = flag(
        2, help="steps at the start of each training process left out of the rules (they compile)"
    )

    def __post_init__(self):
        require(self.skip_first_steps >= 0,
                f"--skip_first_steps must be >= 0, got {self.skip_first_steps}")


@dataclasses.dataclass(frozen=True)
class Report:
    figures: dict
    findings: list[Finding]
    page: str
    charts: tuple[str, ...]


def _write(path: str, data: bytes) -> None:
    with storage.atomic_open(path, "wb") as handle:
        handle.write(data)


def _figure_text(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value[:20]) + (" ..." if len(value) > 20 else "")
    return "no data" if value is None else str(value)


def render_page(*, model_dir: str, figures: dict, findings: list[Finding]) -> str:
    """The HTML page: the diagnosis, every rule's verdict, the figures, the charts."""
    fired = {finding.rule for finding in findings}
    items = "".join(f"<li>{html.escape(str(f))}</li>" for f in findings) or "<li>no rule holds</li>"
    rules = "".join(
        f"<tr><td>{html.escape(rule.name)}</td><td><code>{rule.figure} {html.escape(rule.op)} "
        f"{rule.threshold:g}</code></td><td>{_figure_text(figures.get(rule.figure))}</td><td>"
        + ("holds" if rule in fired else "no" if figures.get(rule.figure) is not None
           else "not judged (no data)")
        + "</td></tr>"
        for rule in RULES
    )
    shown = {k: v for k, v in figures.items() if k != "outlier_steps_text"}
    rows = "".join(f"<tr><td><code>{k}</code></td><td>{html.escape(_figure_text(v))}</td></tr>"
                   for k, v in shown.items())
    sections = "".join(
        f'<h2>{c.title}</h2><p>{html.escape(c.how_to_read)}</p>'
        f'<img src="{c.file}" alt="{c.title}" width="1000">'
        for c in CHARTS
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Profile of {html.escape(model_dir)}</title>
<style>body{{font-family:sans-serif;max-width:1040px;margin:auto}}td,th{{padding:2px 10px;
text-align:left}}img{{max-width:100%}}</style></head><body>
<h1>Profile of {html.escape(model_dir)}</h1>
<h2>Diagnosis</h2><ul>{items}</ul>
<h2>Rules</h2><table><tr><th>rule</th><th>holds when</th><th>value</th><th>verdict</th></tr>
{rules}</table>
<h2>Figures</h2><table>{rows}</table>
{sections}
</body></html>
"""


def report(*, model_dir: str, output: str = "", skip_first_steps: int = 2) -> Report:
    """Read the profile of ``model_dir``, write the page, charts and diagnosis to ``output``."""
    profile = storage.join(model_dir, jsonl.PROFILE_DIR)
    steps = jsonl.read(storage.join(profile, jsonl.STEPS_FILE))
    samples = jsonl.read(storage.join(profile, jsonl.SYSTEM_FILE))
    if not steps:
        raise InputError(
            f"{storage.join(profile, jsonl.STEPS_FILE)}: no training steps recorded; is "
            "--model_dir a trainer.train run that has trained at least one step?"
        )
    output = output or storage.join(profile, REPORT_DIR)
    figures = summarize(steps, samples, skip_first_steps=skip_first_steps)
    findings = diagnose(figures)
    t0 = charts.origin(steps, samples)
    images = {
        "timeline.png": lambda: charts.timeline(
            steps, samples, t0=t0, skip_first_steps=skip_first_steps
        ),
        "steps.png": lambda: charts.step_split(steps, skip_first_steps=skip_first_steps),
        "cpu.png": lambda: charts.cpu(samples, t0=t0),
        "gpu.png": lambda: charts.gpu(samples, t0=t0),
        "memory.png": lambda: charts.memory(samples, t0=t0),
        "io.png": lambda: charts.disk_and_network(samples, t0=t0),
    }
    for chart in CHARTS:
        _write(storage.join(output, chart.file), images[chart.file]())
    diagnosis = {
        "figures": figures,
        "findings": [
            {"rule": f.rule.name, "figure": f.rule.figure, "value": f.value, "op": f.rule.op,
             "threshold": f.rule.threshold, "message": f.message}
            for f in findings
        ],
    }
    _write(storage.join(output, DIAGNOSIS), json.dumps(diagnosis, indent=2).encode())
    page = storage.join(output, PAGE)
    _write(page, render_page(model_dir=model_dir, figures=figures, findings=findings).encode())
    return Report(figures=figures, findings=findings, page=page,
                  charts=tuple(storage.join(output, chart.file) for chart in CHARTS))


def run(flags: ReportFlags) -> None:
    result = report(
        model_dir=flags.model_dir, output=flags.output, skip_first_steps=flags.skip_first_steps
    )
    figures = result.figures
    print(f"profile of {flags.model_dir}: {figures['steps']} steps "
          f"({figures['steps_judged']} judged)")
    print("diagnosis:")
    for finding in result.findings:
        print(f"  {finding}")
    if figures["sampler_cpu_fraction"] is not None:
        print(f"system sampler: {figures['sampler_cpu_fraction']:.2%} of one core")
    print(f"wrote {result.page} and {len(result.charts)} charts")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.profile_report", description=__doc__)
    add_flags(parser, ReportFlags)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(from_args(ReportFlags, args)))


if __name__ == "__main__":
    sys.exit(main())
