"""The profiler: a slowed input is diagnosed input-bound, a normal tiny run is not; the sampler
survives SIGKILL with every row complete; NVML and cgroup memory are read when present."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types

import keras
import pytest
import tensorflow as tf

from datagen.datasets import learnable_dataset
from schemas import manifest
from trainer import loop, profile_report
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.model import GPTConfig
from trainer.observe.sampler import GpuProbe, SystemSampler, cgroup_memory

SEQ_LEN = 32
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def train(train_data, model_dir, *, map_input=None, sample_system_every_ms=200):
    keras.utils.set_random_seed(0)
    return loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=SEQ_LEN),
        train_config=TrainConfig(steps=12, global_batch_size=8, log_every=6, checkpoint_every=100,
                                 sample_system_every_ms=sample_system_every_ms),
        backend=StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0")),
        train_data=train_data,
        model_dir=str(model_dir),
        map_input=map_input,
    )


def slow_input(dataset, seconds=0.1):
    """Each batch waits ``seconds`` in the input pipeline, as if read from slow storage."""

    def sleep(labels):
        time.sleep(seconds)
        return labels

    def delayed(inputs, labels):
        slowed = tf.numpy_function(sleep, [labels], labels.dtype, stateful=True)
        return inputs, tf.ensure_shape(slowed, labels.shape)

    return dataset.map(delayed)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return manifest.load(learnable_dataset(str(tmp_path_factory.mktemp("data")), seq_len=SEQ_LEN))


def findings(report):
    return {finding.rule.name: finding for finding in report.findings}


def test_a_slowed_input_is_diagnosed_input_bound(data, tmp_path, capsys):
    train(data, tmp_path, map_input=slow_input)
    assert profile_report.main([f"--model_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "input-bound:" in line)
    assert "of step time waiting on data" in line and "[input_wait_fraction 0." in line
    assert ">= 0.2]" in line and "compute-bound" not in out
    with open(tmp_path / "profile" / "report" / "diagnosis.json") as handle:
        found = {f["rule"]: f for f in json.load(handle)["findings"]}
    assert found["input-bound"]["value"] > 0.5


def test_a_normal_tiny_run_is_compute_bound_and_the_sampler_costs_under_2_percent(data, tmp_path):
    train(data, tmp_path)
    report = profile_report.report(model_dir=str(tmp_path))
    assert "input-bound" not in findings(report)
    assert findings(report)["compute-bound"].value < 0.2
    with open(tmp_path / "profile" / "steps.jsonl") as handle:
        step_s = sum(row["input_s"] + row["compute_s"] for row in map(json.loads, handle))
    with open(tmp_path / "profile" / "system.jsonl") as handle:
        sampler_cpu_s = [json.loads(line) for line in handle][-1]["sampler_cpu_s"]
    # Every 200 ms here (2.5x the default rate): still under 2% of the time spent in steps.
    assert sampler_cpu_s / step_s < 0.02
    assert report.figures["sampler_cpu_fraction"] < 0.02


WRITER = textwrap.dedent("""
    import sys
    from trainer.observe.jsonl import JsonLinesWriter
    from trainer.observe.sampler import SystemSampler

    SystemSampler(path=sys.argv[1], interval_s=0.002).start()
    steps = JsonLinesWriter(sys.argv[2])
    step = 0
    while True:  # rows of ~3 kB from the main thread while the sampler writes from its own
        steps.write({"step": step, "input_s": 0.001, "compute_s": 0.002, "pad": "x" * 3000})
        step += 1
""")


def test_a_killed_run_leaves_only_complete_rows(tmp_path):
    system, steps = tmp_path / "system.jsonl", tmp_path / "steps.jsonl"
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(system), str(steps)], cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while not (system.exists() and system.read_text().count("\n") >= 20):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL
    for path in (system, steps):
        text = path.read_text()
        # Linux may cut a write(2) short when SIGKILL arrives during it: at most the last line
        # is torn, never one in the middle (the reader drops it: test_profile_report.py).
        complete = text[:text.rfind("\n") + 1]
        rows = [json.loads(line) for line in complete.splitlines()]
        assert len(rows) >= 20
    assert [row["step"] for row in rows] == list(range(len(rows)))


class FakeNVML(types.SimpleNamespace):
    """pynvml's calls the probe makes, on two GPUs."""

    class NVMLError(Exception):
        pass

    def __init__(self, *, fail_init=False):
        super().__init__(shut=False)
        self.fail_init = fail_init

    def nvmlInit(self):
        if self.fail_init:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=40 + handle, memory=10)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=(handle + 1) << 30, total=80 << 30, free=0)

    def nvmlShutdown(self):
        self.shut = True


def test_gpus_are_sampled_through_nvml(tmp_path):
    nvml = FakeNVML()
    probe = GpuProbe(nvml=nvml)
    assert probe.count == 2
    sampler = SystemSampler(path=str(tmp_path / "system.jsonl"), interval_s=0.01, gpu=probe)
    sampler.start()
    time.sleep(0.05)
    sampler.stop()
    with open(tmp_path / "system.jsonl") as handle:
        row = json.loads(handle.readline())
    assert row["gpus"] == [
        {"index": 0, "utilization_percent": 40.0, "memory_used_bytes": 1 << 30,
         "memory_total_bytes": 80 << 30},
        {"index": 1, "utilization_percent": 41.0, "memory_used_bytes": 2 << 30,
         "memory_total_bytes": 80 << 30},
    ]
    assert nvml.shut


def test_no_driver_or_no_gpu_means_no_gpu_rows():
    assert GpuProbe(nvml=FakeNVML(fail_init=True)).count == 0
    assert GpuProbe().count == len(tf.config.list_physical_devices("GPU"))  # real pynvml here


def test_a_containers_memory_limit_is_read_from_its_cgroup(tmp_path):
    usage, limit, stat = tmp_path / "memory.current", tmp_path / "memory.max", tmp_path / "stat"
    usage.write_text("1073741824\n")
    limit.write_text("4294967296\n")
    files = [(str(usage), str(limit), str(stat))]
    assert cgroup_memory(files) == (1 << 30, 4 << 30)  # no memory.stat: all of it counts
    stat.write_text("anon 536870912\nfile 536870912\ninactive_file 268435456\n")
    assert cgroup_memory(files) == ((1 << 30) - (1 << 28), 4 << 30)  # page cache it can drop
    limit.write_text("max\n")
    assert cgroup_memory(files) is None
    missing = str(tmp_path / "none")
    assert cgroup_memory([(missing, missing, missing)]) is None
