"""trainer/profile_report.py and trainer/observe/diagnose.py on hand-made profiles: every rule
fires at its threshold and names it, the PNGs decode, the page links only files that exist."""

import json
import os
import re

import matplotlib.image
import pytest

from trainer import profile_report
from trainer.observe import jsonl
from trainer.observe.diagnose import RULES, diagnose, summarize

T0 = 1_767_225_600.0


def steps(count, *, input_s=0.01, compute_s=0.09, slow=()):
    """``count`` steps from global step 1, back to back; steps in ``slow`` take 10x longer."""
    rows, now = [], T0
    for n in range(count):
        factor = 10 if n + 1 in slow else 1
        row = {"step": n + 1, "n": n, "time": now, "input_s": input_s * factor,
               "compute_s": compute_s * factor}
        rows.append(row)
        now += (row["input_s"] + row["compute_s"]) * 1.001
    return rows


def samples(seconds, *, cpu=30.0, memory=40.0, gpus=()):
    return [
        {"time": T0 + 0.5 * i, "cpu_percent": [cpu, cpu / 2], "process_cpu_percent": cpu,
         "process_rss_bytes": 1 << 30, "memory_used_bytes": int(memory * (1 << 30) / 100),
         "memory_limit_bytes": 1 << 30, "memory_percent": memory,
         "disk_read_bytes_per_s": 5e6, "disk_write_bytes_per_s": 1e6,
         "net_recv_bytes_per_s": 2e6, "net_sent_bytes_per_s": 1e5,
         "gpus": [{"index": g, "utilization_percent": u, "memory_used_bytes": 70 << 30,
                   "memory_total_bytes": 80 << 30} for g, u in enumerate(gpus)],
         "sampler_cpu_s": 0.001 * i}
        for i in range(int(seconds / 0.5) + 1)
    ]


def write_profile(model_dir, step_rows, sample_rows):
    profile = os.path.join(model_dir, jsonl.PROFILE_DIR)
    for name, rows in ((jsonl.STEPS_FILE, step_rows), (jsonl.SYSTEM_FILE, sample_rows)):
        writer = jsonl.JsonLinesWriter(os.path.join(profile, name))
        for row in rows:
            writer.write(row)
        writer.close()


def names(figures):
    return {finding.rule.name for finding in diagnose(figures)}


def test_the_figures_of_a_run():
    figures = summarize(steps(40, slow=(20,)), samples(4.0, gpus=(50, 70)), skip_first_steps=2)
    assert figures["steps"] == 40 and figures["steps_judged"] == 38
    assert figures["input_wait_fraction"] == pytest.approx(0.1)
    assert figures["step_time_median_s"] == pytest.approx(0.1)
    assert figures["step_time_max_over_median"] == pytest.approx(10)
    assert figures["outlier_steps"] == [20]
    assert figures["host_cpu_median_percent"] == pytest.approx(22.5)
    assert figures["gpu_utilization_median"] == pytest.approx(60)
    assert figures["sampler_cpu_fraction"] == pytest.approx(0.002)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_each_rule_fires_at_its_threshold_and_names_figure_and_threshold(rule):
    figures = summarize(steps(10, slow=(8,)), samples(1.0), skip_first_steps=0)
    below = rule.threshold * 0.99 if rule.threshold else -1
    for value, fires in ((rule.threshold, rule.op == ">="), (below, rule.op == "<")):
        judged = {**figures, rule.figure: value}
        if rule.figure == "input_wait_fraction":
            judged["compute_fraction"] = 1 - value
        found = [f for f in diagnose(judged) if f.rule is rule]
        assert bool(found) == fires, (rule.name, value)
        if found:
            text = str(found[0])
            assert text.startswith(f"{rule.name}: ")
            assert text.endswith(f"[{rule.figure} {value:.3g} {rule.op} {rule.threshold:g}]")


def test_a_figure_without_data_is_not_judged():
    figures = summarize(steps(3), [], skip_first_steps=2)  # one step judged, no samples
    assert figures["gpu_utilization_median"] is None
    assert figures["step_time_max_over_median"] is None
    assert names(figures) == {"compute-bound"}


def test_input_bound_gpu_idle_outliers_and_memory_are_told_apart():
    waiting = summarize(steps(30, input_s=0.06, compute_s=0.04, slow=(25,)),
                        samples(3.0, memory=95.0, gpus=(20,)), skip_first_steps=2)
    assert names(waiting) == {"input-bound", "GPU under-utilized", "step-time outliers",
                              "host memory near its limit"}
    message = next(str(f) for f in diagnose(waiting) if f.rule.name == "input-bound")
    assert message.startswith("input-bound: 60% of step time waiting on data — raise the number")
    outliers = next(str(f) for f in diagnose(waiting) if f.rule.name == "step-time outliers")
    assert "steps 25 took 10.0x the median step time (0.100 s)" in outliers
    busy = summarize(steps(30), samples(3.0, cpu=100.0, gpus=(99,)), skip_first_steps=2)
    assert names(busy) == {"compute-bound"}  # 2 cores at 100% and 50%: median 75% < 90%


def test_the_report_writes_decodable_charts_and_a_page_that_links_them(tmp_path, capsys):
    write_profile(str(tmp_path), steps(50, input_s=0.05, compute_s=0.05, slow=(30,)),
                  samples(6.0, gpus=(35, 45)))
    assert profile_report.main([f"--model_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"profile of {tmp_path}: 50 steps (48 judged)"
    assert any(line.startswith("  input-bound: 50% of step time waiting on data") for line in out)
    assert any(line.startswith("  step-time outliers: steps 30 took") for line in out)
    report_dir = tmp_path / "profile" / "report"
    page = (report_dir / "index.html").read_text()
    images = re.findall(r'src="([^"]+)"', page)
    assert sorted(images) == sorted(chart.file for chart in profile_report.CHARTS)
    for name in images:
        pixels = matplotlib.image.imread(report_dir / name)
        assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 500
    assert "input-bound" in page and "GPU under-utilized" in page
    diagnosis = json.loads((report_dir / "diagnosis.json").read_text())
    assert {f["rule"] for f in diagnosis["findings"]} >= {"input-bound", "step-time outliers"}


def test_a_cut_off_last_line_is_ignored_and_the_output_can_go_elsewhere(tmp_path, capsys):
    write_profile(str(tmp_path), steps(5), samples(1.0))
    with open(tmp_path / "profile" / "steps.jsonl", "a") as handle:
        handle.write('{"step": 6, "inp')  # a write cut short
    out_dir = tmp_path / "elsewhere"
    assert profile_report.main([f"--model_dir={tmp_path}", f"--output={out_dir}"]) == 0
    assert "5 steps (3 judged)" in capsys.readouterr().out
    assert (out_dir / "index.html").exists() and (out_dir / "timeline.png").exists()


def test_no_profile_is_an_error_naming_the_file(tmp_path, capsys):
    assert profile_report.main([f"--model_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "profile/steps.jsonl" in err
    assert profile_report.main([f"--model_dir={tmp_path}", "--skip_first_steps=-1"]) == 2
