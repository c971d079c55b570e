"""trainer/input/train_input.py: a resumed run continues the order, and says how."""

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from common.errors import InputError
from datagen.datasets import learnable_dataset
from schemas import manifest
from schemas.records import TOKENS
from trainer import loop, run_record
from trainer.config import BLOCK, SHUFFLED_BLOCK, SHUFFLED_WINDOW, WINDOW, TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.input.global_order import make_global_dataset, plan_global
from trainer.input.train_input import log_resume, resolve_order
from trainer.model import GPTConfig


def train(data, model_dir, *, steps, batch, map_input=None, **order):
    keras.utils.set_random_seed(0)
    backend = StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"),
                              rank=0, world_size=1)
    return loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train_config=TrainConfig(steps=steps, global_batch_size=batch, warmup_steps=0,
                                 log_every=1, checkpoint_every=2, **order),
        backend=backend,
        train_data=data,
        model_dir=str(model_dir),
        map_input=map_input,
        export=False,
    )


def trainer_warnings(caplog):
    """The trainer's warnings (not TensorFlow's, e.g. about retracing after several runs)."""
    return [record.getMessage() for record in caplog.records
            if record.name.startswith("trainer") and record.levelno >= logging.WARNING]


def test_a_changed_global_batch_continues_from_the_same_record_and_says_so(tmp_path, caplog):
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    train(data, tmp_path / "run", steps=4, batch=8)  # 32 records
    inputs = []
    with caplog.at_level(logging.WARNING):
        resumed = train(data, tmp_path / "run", steps=6, batch=4,
                        map_input=lambda dataset: inputs.append(dataset) or dataset)
    assert ("--global_batch_size is 4, run.json says 8: continuing from global record "
            "position 32 of the same order, in batches of 4") in caplog.text
    assert resumed.start_step == 4 and [row["step"] for row in resumed.history] == [5, 6]
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=4)
    expected = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, start=32,
                                   block=BLOCK, window=WINDOW)  # the defaults, kept on resume
    for (got, _), (want, _) in zip(inputs[0].take(3), expected.take(3), strict=True):
        np.testing.assert_array_equal(got[TOKENS], want[TOKENS])


def test_a_resume_continues_the_order_of_the_run_it_resumes(tmp_path, caplog):
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    run = tmp_path / "run"
    train(data, run, steps=2, batch=8)  # the defaults: blocks of 32, windows of 64
    with caplog.at_level(logging.WARNING):
        train(data, run, steps=4, batch=8, order_block=2, order_window=4)  # 16 records on
    assert "--order_block 2 --order_window 4, run.json says 32 and 64" in caplog.text
    doc = json.loads((run / "run.json").read_text())
    assert (doc["data"]["order_block"], doc["data"]["order_window"]) == (2, 4)
    caplog.clear()
    inputs = []
    with caplog.at_level(logging.WARNING):  # the flags left at 0: the order of the last run
        resumed = train(data, run, steps=6, batch=8,
                        map_input=lambda dataset: inputs.append(dataset) or dataset)
    assert trainer_warnings(caplog) == [] and resumed.start_step == 4
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=8)
    expected = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, start=32,
                                   block=2, window=4)
    for (got, _), (want, _) in zip(inputs[0].take(2), expected.take(2), strict=True):
        np.testing.assert_array_equal(got[TOKENS], want[TOKENS])


def test_what_a_resume_says(caplog):
    run = {"train_manifest": "m", "num_pipelines": 2, "global_batch_size": 8, "order": "global",
           "order_block": 1, "order_window": 1, "seed": 0}
    with caplog.at_level(logging.INFO):
        log_resume(saved=run, now=run, examples_seen=16)
        assert caplog.text == ""
        log_resume(saved=run, now={**run, "num_pipelines": 3}, examples_seen=16)
        assert "resuming on 3 input pipelines (run.json: 2)" in caplog.text
        assert "WARNING" not in caplog.text
        files = {**run, "order": "files"}
        log_resume(saved=files, now={**files, "num_pipelines": 3}, examples_seen=16)
        assert "WARNING" in caplog.text and "differ from an uninterrupted run's" in caplog.text
        caplog.clear()
        log_resume(saved=run, now={**run, "order_window": 64}, examples_seen=16)
        assert ("--order_block 1 --order_window 64, run.json says 1 and 1: continuing from global "
                "record position 16 of another order") in caplog.text
        caplog.clear()
        log_resume(saved=run, now={**run, "seed": 7}, examples_seen=16)
        assert ("--seed 7, run.json says 0: continuing from global record position 16 of another "
                "permutation") in caplog.text


def test_the_order_defaults_follow_the_split_and_a_resume_keeps_its_own(tmp_path, caplog):
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    auto = TrainConfig(steps=1, global_batch_size=8)
    with caplog.at_level(logging.INFO):
        got = resolve_order(cfg=auto, train_data=data, saved=None)
    assert (got.order_block, got.order_window) == (BLOCK, WINDOW)
    assert "windows of 64 blocks (the defaults for a split written in input order)" in caplog.text
    shuffled = manifest.Dataset(manifest_path=data.manifest_path,
                                doc={**data.doc, "shuffle": {"mode": "global", "seed": 0}})
    got = resolve_order(cfg=auto, train_data=shuffled, saved=None)
    assert (got.order_block, got.order_window) == (SHUFFLED_BLOCK, SHUFFLED_WINDOW) == (64, 1)
    one = resolve_order(cfg=TrainConfig(steps=1, global_batch_size=8, order_block=1),
                        train_data=data, saved=None)
    assert (one.order_block, one.order_window) == (1, 1)  # one permutation of all records
    # a resume keeps the run's order
    saved = {"order": "global", "order_block": 64, "order_window": 2}
    got = resolve_order(cfg=auto, train_data=data, saved=saved)
    assert (got.order_block, got.order_window) == (64, 2)
    got = resolve_order(cfg=TrainConfig(steps=1, global_batch_size=8, order_window=8),
                        train_data=data, saved=saved)
    assert (got.order_block, got.order_window) == (64, 8)  # a flag given wins
    files = TrainConfig(steps=1, global_batch_size=8, order="files")
    assert resolve_order(cfg=files, train_data=data, saved=saved) == files


def test_a_run_recorded_before_the_window_resumes_its_order(tmp_path, caplog):
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    train(data, tmp_path / "run", steps=4, batch=8, order_block=1)  # 32 records
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    assert doc["data"]["order_window"] == 1  # --order_block=1 alone: one record-level order
    for section in ("train", "data"):  # as the trainer before --order_window wrote it
        del doc[section]["order_window"]
    doc["version"] = 1
    del doc["data"]["seed"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(doc))
    inputs = []
    with caplog.at_level(logging.WARNING):
        resumed = train(data, tmp_path / "run", steps=6, batch=8,
                        map_input=lambda dataset: inputs.append(dataset) or dataset)
    assert trainer_warnings(caplog) == [] and resumed.start_step == 4
    assert "order_window" not in json.loads((tmp_path / "run" / "run.json").read_text())["data"]
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=8)
    expected = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, start=32)
    for (got, _), (want, _) in zip(inputs[0].take(2), expected.take(2), strict=True):
        np.testing.assert_array_equal(got[TOKENS], want[TOKENS])


def test_a_run_recorded_before_the_order_flag_read_files(tmp_path):
    record = run_record.RunRecord(
        model=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train=TrainConfig(steps=1, global_batch_size=1), tokenizer={}, data={})
    run_record.write(record, model_dir=str(tmp_path))
    doc = json.loads((tmp_path / "run.json").read_text())
    doc["version"] = 1
    del doc["train"]["order"]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    assert run_record.read(str(tmp_path)).train.order == "files"
    assert TrainConfig(steps=1, global_batch_size=1).order == "global"


def test_a_resume_with_another_seed_says_so_and_continues_that_permutation(tmp_path, caplog):
    data = manifest.load(learnable_dataset(str(tmp_path / "data")))
    run = tmp_path / "run"
    train(data, run, steps=2, batch=8)  # --seed 0
    assert json.loads((run / "run.json").read_text())["data"]["seed"] == 0
    inputs = []
    with caplog.at_level(logging.WARNING):
        train(data, run, steps=4, batch=8, seed=5,
              map_input=lambda dataset: inputs.append(dataset) or dataset)
    assert trainer_warnings(caplog) == [(
        "--seed 5, run.json says 0: continuing from global record position 16 of another "
        "permutation (until this epoch ends, some records repeat and others are left out)")]
    doc = json.loads((run / "run.json").read_text())
    assert doc["data"]["seed"] == 5 and doc["train"]["seed"] == 0  # train: the first run's
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=8)
    expected = make_global_dataset(plan=plan, spec=data.record_spec, seed=5, start=16,
                                   block=BLOCK, window=WINDOW)
    for (got, _), (want, _) in zip(inputs[0].take(2), expected.take(2), strict=True):
        np.testing.assert_array_equal(got[TOKENS], want[TOKENS])
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the recorded seed again: nothing to say
        resumed = train(data, run, steps=6, batch=8, seed=5)
    assert trainer_warnings(caplog) == [] and resumed.start_step == 4


def test_a_version_1_run_record_is_read_as_version_2(tmp_path):
    record = run_record.RunRecord(
        model=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train=TrainConfig(steps=1, global_batch_size=1, seed=3), tokenizer={},
        data={"train_manifest": "m", "num_pipelines": 1, "global_batch_size": 1})
    run_record.write(record, model_dir=str(tmp_path))
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["version"] == run_record.VERSION == 2
    doc["version"] = 1  # as the trainer wrote it before the data section held the seed
    (tmp_path / "run.json").write_text(json.dumps(doc))
    read = run_record.read(str(tmp_path))
    assert read.data == {"train_manifest": "m", "num_pipelines": 1, "global_batch_size": 1,
                         "order": "files", "order_block": 1, "order_window": 1, "seed": 3}
    assert read.train == record.train
    doc["version"] = 3
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="version 3 is not pilepack.run version 2"):
        run_record.read(str(tmp_path))
