"""trainer/evaluate.py: the Evaluator against a direct computation; the command's refusals."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from datagen.datasets import PAD, random_records, write_dataset
from schemas import manifest
from trainer import compat, evaluate, run_record
from trainer.config import TrainConfig
from trainer.distribute.tf_strategy import StrategyBackend
from trainer.evaluate import Evaluator
from trainer.loss import masked_loss_sum
from trainer.model import GPTConfig, build_model

SEQ_LEN, VOCAB = 8, 32
MODEL = GPTConfig.from_preset("tiny", vocab_size=VOCAB, seq_len=SEQ_LEN)


@pytest.fixture(scope="module")
def records():
    out = random_records(np.random.default_rng(0), 12, seq_len=SEQ_LEN, low=4, high=VOCAB)
    for record in out[1::3]:
        record[-3:] = PAD  # a packed final record's padding
    return out


@pytest.fixture(scope="module")
def data(records, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("data"))
    return manifest.load(
        write_dataset(directory, shards=[records], seq_len=SEQ_LEN, vocab_size=VOCAB)
    )


def single():
    return StrategyBackend(name="single", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))


@pytest.mark.parametrize("max_batches,records_read", [(0, 12), (2, 8)])
def test_loss_is_the_mean_over_real_tokens_of_the_batches_read(
    data, records, max_batches, records_read
):
    keras.utils.set_random_seed(0)
    model = build_model(MODEL)
    result = Evaluator(
        model=model, backend=single(), dataset=data, global_batch_size=4, max_batches=max_batches
    )()
    tokens = np.stack(records[:records_read])  # one shard, read in order
    loss_sum, count = masked_loss_sum(tokens[:, 1:], model(tokens[:, :-1]), pad_id=PAD)
    assert result["batches"] == records_read // 4
    assert result["tokens"] == int(count) < records_read * SEQ_LEN  # padding does not count
    assert result["loss"] == pytest.approx(float(loss_sum / count), rel=1e-5)
    assert result["perplexity"] == pytest.approx(math.exp(result["loss"]))


def evaluate_main(capsys, model_dir, eval_manifest):
    capsys.readouterr()
    code = evaluate.main([f"--model_dir={model_dir}", f"--eval_manifest={eval_manifest}"])
    return code, capsys.readouterr().err


def test_a_directory_without_run_record_is_refused(data, tmp_path, capsys):
    code, err = evaluate_main(capsys, tmp_path, data.manifest_path)
    assert code == 2 and f"no {run_record.RUN_FILE}; is this a trainer model_dir?" in err


def test_a_run_without_checkpoint_is_refused(data, tmp_path, capsys):
    record = run_record.RunRecord(
        model=MODEL,
        train=TrainConfig(steps=1, global_batch_size=4),
        tokenizer=compat.tokenizer_identity(data),
        data={},
    )
    run_record.write(record, model_dir=str(tmp_path))
    code, err = evaluate_main(capsys, tmp_path, data.manifest_path)
    assert code == 2 and "no checkpoint in checkpoints/ (train first)" in err


def test_a_corrupt_run_record_is_refused(data, tmp_path, capsys):
    (tmp_path / run_record.RUN_FILE).write_text("{not json")
    code, err = evaluate_main(capsys, tmp_path, data.manifest_path)
    assert code == 2 and "not valid JSON" in err and "new --model_dir" in err


def test_a_missing_eval_manifest_is_refused(tmp_path, capsys):
    code, err = evaluate_main(capsys, tmp_path, str(tmp_path / "nowhere"))
    assert code == 2 and "no manifest here" in err
