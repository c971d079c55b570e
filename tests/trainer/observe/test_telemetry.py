"""trainer/observe/telemetry.py: TensorBoard scalars, per-step timing, traces, chief only."""

import glob
import json
import os
import threading

import keras
import pytest
import tensorflow as tf

from common.errors import ConfigError
from datagen.datasets import learnable_dataset
from schemas import manifest
from trainer import loop
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.model import GPTConfig
from trainer.observe.telemetry import SCALARS, Telemetry, parse_profile_steps

SEQ_LEN = 32


def single():
    return StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))


def train(train_data, model_dir, *, eval_data=None, map_input=None, **options):
    keras.utils.set_random_seed(0)
    config = {"steps": 8, "global_batch_size": 8, "log_every": 4, "checkpoint_every": 100,
              "warmup_steps": 0, **options}
    return loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=SEQ_LEN),
        train_config=TrainConfig(**config),
        backend=single(),
        train_data=train_data,
        eval_data=eval_data,
        model_dir=str(model_dir),
        map_input=map_input,
    )


def read_jsonl(path):
    with open(path) as handle:
        text = handle.read()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def sampler_threads():
    return [t for t in threading.enumerate() if t.name == "pilepack-sampler" and t.is_alive()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return {
        "train": manifest.load(learnable_dataset(str(root / "train"), seq_len=SEQ_LEN)),
        "val": manifest.load(learnable_dataset(
            str(root / "val"), shards=1, records_per_shard=16, seq_len=SEQ_LEN, seed=9,
            split="val",
        )),
    }


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("run")
    result = train(data["train"], model_dir, eval_data=data["val"], eval_every=4, eval_batches=1,
                   profile_steps="3,4", sample_system_every_ms=100)
    return model_dir, result


def test_tensorboard_holds_every_listed_scalar_at_the_logged_steps(run):
    model_dir, result = run
    events = glob.glob(str(model_dir / "tensorboard" / "events.out.tfevents.*"))
    assert len(events) == 1
    written = {}
    for event in tf.compat.v1.train.summary_iterator(events[0]):
        for value in event.summary.value:
            assert value.metadata.plugin_data.plugin_name == "scalars"
            written[(value.tag, event.step)] = float(tf.make_ndarray(value.tensor))
    assert {tag for tag, _ in written} == set(SCALARS)
    assert {step for _, step in written} == {4, 8}
    for row in result.history:
        assert written[("train/loss", row["step"])] == pytest.approx(row["loss"])
        assert written[("train/learning_rate", row["step"])] == pytest.approx(row["lr"])
        assert written[("train/tokens_per_s", row["step"])] == pytest.approx(row["tokens_per_s"])
        assert 0 <= written[("train/input_wait_fraction", row["step"])] < 1
        assert written[("train/step_time_s", row["step"])] > 0
    for evaluation in result.evals:
        assert written[("eval/loss", evaluation["step"])] == pytest.approx(evaluation["eval_loss"])
        assert written[("eval/perplexity", evaluation["step"])] == pytest.approx(
            evaluation["eval_perplexity"], rel=1e-5
        )


def test_every_step_is_split_into_input_wait_and_compute(run):
    model_dir, _ = run
    rows = read_jsonl(model_dir / "profile" / "steps.jsonl")
    assert [(r["step"], r["n"]) for r in rows] == [(s, s - 1) for s in range(1, 9)]
    assert all(r["input_s"] >= 0 and r["compute_s"] > 0 for r in rows)
    assert [r["time"] for r in rows] == sorted(r["time"] for r in rows)


def test_profile_steps_write_a_trace_for_tensorboards_profile_tab(run):
    model_dir, _ = run
    assert glob.glob(str(model_dir / "tensorboard" / "plugins" / "profile" / "*" / "*.xplane.pb"))


def test_the_sampler_stops_and_leaves_complete_rows_when_training_ends(run):
    model_dir, _ = run
    assert not sampler_threads()
    rows = read_jsonl(model_dir / "profile" / "system.jsonl")
    assert len(rows) >= 2
    for row in rows:
        assert len(row["cpu_percent"]) == os.cpu_count()
        assert 0 < row["memory_percent"] < 100 and row["gpus"] == []
        assert row["disk_read_bytes_per_s"] >= 0 and row["net_recv_bytes_per_s"] >= 0
    assert rows[-1]["sampler_cpu_s"] >= rows[0]["sampler_cpu_s"] > 0


def test_the_sampler_stops_when_training_fails(data, tmp_path):
    def fail_at_third_batch(dataset):
        def check(index, batch):
            if index == 2:
                raise RuntimeError("input broke")
            return batch

        def guarded(index, batch):
            inputs, labels = batch
            labels = tf.numpy_function(check, [index, labels], labels.dtype)
            return inputs, tf.ensure_shape(labels, batch[1].shape)

        return dataset.enumerate().map(guarded)

    with pytest.raises(tf.errors.OpError, match="input broke"):
        train(data["train"], tmp_path, map_input=fail_at_third_batch, sample_system_every_ms=50)
    assert not sampler_threads()
    assert [r["step"] for r in read_jsonl(tmp_path / "profile" / "steps.jsonl")] == [1, 2]
    assert read_jsonl(tmp_path / "profile" / "system.jsonl")


def test_other_ranks_only_hand_out_batches(tmp_path):
    telemetry = Telemetry(model_dir=str(tmp_path), enabled=False, profile_steps="1,2")
    batches = iter([10, 20])
    seen = []
    for step in telemetry.steps(1, 2):
        seen.append(telemetry.next_batch(batches))
        telemetry.step_done(step, wait_for=tf.constant(0.0))
    assert seen == [10, 20] and os.listdir(tmp_path) == []


def test_a_remote_model_dir_gets_the_profile_when_the_run_ends():
    model_dir = "ram://telemetry-run"  # a TensorFlow file system that is not local
    telemetry = Telemetry(model_dir=model_dir, enabled=True, sample_every_ms=10)
    for step in telemetry.steps(1, 3):
        telemetry.next_batch(iter([step]))
        telemetry.step_done(step, wait_for=tf.constant(0.0))
        telemetry.log_train(step, {"loss": 1.0, "lr": 0.1})
    with tf.io.gfile.GFile(f"{model_dir}/profile/steps.jsonl") as handle:
        assert [json.loads(line)["step"] for line in handle] == [1, 2, 3]
    assert tf.io.gfile.exists(f"{model_dir}/profile/system.jsonl")
    assert tf.io.gfile.glob(f"{model_dir}/tensorboard/events.out.tfevents.*")


@pytest.mark.parametrize("text", ["5", "0,3", "4,3", "a,b", "1,2,3"])
def test_profile_steps_must_be_a_range_of_global_steps(text):
    with pytest.raises(ConfigError, match="--profile_steps"):
        parse_profile_steps(text)


def test_profile_steps_parse():
    assert parse_profile_steps("") is None
    assert parse_profile_steps("20,25") == (20, 25)
    assert parse_profile_steps("7,7") == (7, 7)
