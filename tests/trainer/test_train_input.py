"""trainer/train_input.py: a resumed run continues the order, and says how."""

import json
import logging

import keras
import numpy as np
import tensorflow as tf

from datagen.datasets import learnable_dataset
from schemas import manifest
from schemas.records import TOKENS
from trainer import loop, run_record
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.global_order import make_global_dataset, plan_global
from trainer.model import GPTConfig
from trainer.train_input import log_resume


def train(data, model_dir, *, steps, batch, map_input=None):
    keras.utils.set_random_seed(0)
    backend = StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"),
                              rank=0, world_size=1)
    return loop.train(
        model_config=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train_config=TrainConfig(steps=steps, global_batch_size=batch, warmup_steps=0,
                                 log_every=1, checkpoint_every=2),
        backend=backend,
        train_data=data,
        model_dir=str(model_dir),
        map_input=map_input,
        export=False,
    )


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
    expected = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, start=32)
    for (got, _), (want, _) in zip(inputs[0].take(3), expected.take(3), strict=True):
        np.testing.assert_array_equal(got[TOKENS], want[TOKENS])


def test_what_a_resume_says(caplog):
    run = {"train_manifest": "m", "num_pipelines": 2, "global_batch_size": 8, "order": "global",
           "order_block": 1}
    with caplog.at_level(logging.INFO):
        log_resume(saved=run, now=run, examples_seen=16)
        assert caplog.text == ""
        log_resume(saved=run, now={**run, "num_pipelines": 3}, examples_seen=16)
        assert "resuming on 3 input pipelines (run.json: 2)" in caplog.text
        assert "WARNING" not in caplog.text
        files = {**run, "order": "files"}
        log_resume(saved=files, now={**files, "num_pipelines": 3}, examples_seen=16)
        assert "WARNING" in caplog.text and "differ from an uninterrupted run's" in caplog.text


def test_a_run_recorded_before_the_order_flag_read_files(tmp_path):
    record = run_record.RunRecord(
        model=GPTConfig.from_preset("tiny", vocab_size=32, seq_len=16),
        train=TrainConfig(steps=1, global_batch_size=1), tokenizer={}, data={})
    run_record.write(record, model_dir=str(tmp_path))
    doc = json.loads((tmp_path / "run.json").read_text())
    del doc["train"]["order"]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    assert run_record.read(str(tmp_path)).train.order == "files"
    assert TrainConfig(steps=1, global_batch_size=1).order == "global"
