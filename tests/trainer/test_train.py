"""``python -m trainer.train`` end to end on the CPU (in-process ``main``)."""

import json
import math
import os

import pytest

from datagen.datasets import learnable_dataset
from trainer import evaluate, train


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return {
        "train": learnable_dataset(str(root / "train")),
        "val": learnable_dataset(
            str(root / "val"), shards=1, records_per_shard=24, seed=9, split="val"
        ),
        "other": learnable_dataset(str(root / "other"), tokenizer_bytes=b"another tokenizer"),
        "segments": learnable_dataset(str(root / "segments"), with_segments=True),
    }


def metrics(model_dir):
    with open(os.path.join(model_dir, "metrics.jsonl")) as handle:
        return [json.loads(line) for line in handle]


def flags(data, model_dir, *extra):
    return [
        f"--train_manifest={data['train']}",
        f"--eval_manifest={data['val']}",
        f"--model_dir={model_dir}",
        "--preset=tiny",
        "--global_batch_size=8",
        "--learning_rate=3e-3",
        "--warmup_steps=5",
        "--log_every=5",
        "--checkpoint_every=20",
        "--eval_every=20",
        *extra,
    ]


def test_trains_evaluates_exports_and_resumes(tmp_path, data, capsys):
    model_dir = str(tmp_path / "run")
    assert train.main(flags(data, model_dir, "--steps=40")) == 0
    rows = metrics(model_dir)
    losses = [r["loss"] for r in rows if "loss" in r]
    evals = [r for r in rows if "eval_loss" in r]
    assert [r["step"] for r in rows if "loss" in r] == list(range(5, 41, 5))
    assert losses[-1] < losses[0] / 2  # counting sequences are learnable
    assert [e["step"] for e in evals] == [20, 40] and evals[1]["eval_loss"] < evals[0]["eval_loss"]
    assert evals[1]["eval_loss"] < math.log(32) / 2
    assert evals[1]["eval_perplexity"] == pytest.approx(math.exp(evals[1]["eval_loss"]))
    for name in (
        "run.json",
        "export/model.keras",
        "checkpoints/ckpt-40.index",
        "checkpoints/ckpt-20.index",
    ):
        assert os.path.exists(os.path.join(model_dir, name)), name

    capsys.readouterr()
    argv = [f"--model_dir={model_dir}", f"--eval_manifest={data['val']}", "--global_batch_size=8"]
    assert evaluate.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["loss"] == pytest.approx(evals[1]["eval_loss"], rel=1e-5)
    assert result["checkpoint"].endswith("ckpt-40")

    assert train.main(flags(data, model_dir, "--steps=50")) == 0  # resumes at 40
    assert [r["step"] for r in metrics(model_dir)[len(rows) :] if "loss" in r] == [45, 50]


def test_refuses_data_or_flags_that_do_not_fit_the_run(tmp_path, data, capsys):
    model_dir = str(tmp_path / "run")
    assert train.main(flags(data, model_dir, "--steps=2")) == 0
    capsys.readouterr()
    fresh = [
        a
        for a in flags(data, str(tmp_path / "fresh"), "--steps=4")
        if not a.startswith("--train_manifest")
    ]
    assert train.main([*fresh, f"--train_manifest={data['other']}"]) == 2
    assert "does not match" in capsys.readouterr().err  # train vs eval tokenizer
    assert (
        train.main(
            [
                f"--train_manifest={data['other']}",
                f"--model_dir={model_dir}",
                "--steps=4",
                "--global_batch_size=8",
            ]
        )
        == 2
    )
    assert "differs from the one the model in model_dir was trained with" in capsys.readouterr().err
    assert train.main([*flags(data, model_dir, "--steps=4"), "--preset=mini"]) == 2
    assert "different model" in capsys.readouterr().err
    assert evaluate.main([f"--model_dir={model_dir}", f"--eval_manifest={data['other']}"]) == 2
    assert "tokenizer sha256" in capsys.readouterr().err
    assert train.main([*flags(data, str(tmp_path / "h"), "--steps=4"), "--backend=horovod"]) == 2
    assert "pip install" in capsys.readouterr().err
    assert (
        train.main(
            [*flags(data, str(tmp_path / "m"), "--steps=4"), "--train_manifest=/nonexistent"]
        )
        == 2
    )
    assert "no manifest here" in capsys.readouterr().err


def test_bf16_xla_recompute_and_segments_train(tmp_path, data):
    model_dir = str(tmp_path / "run")
    argv = [
        f"--train_manifest={data['segments']}",
        f"--model_dir={model_dir}",
        "--steps=3",
        "--global_batch_size=4",
        "--log_every=1",
        "--bf16",
        "--xla",
        "--recompute",
        "--use_segments",
        "--dropout=0.1",
    ]
    assert train.main(argv) == 0
    rows = metrics(model_dir)
    assert len(rows) == 3 and all(math.isfinite(r["loss"]) for r in rows)
    with open(os.path.join(model_dir, "run.json")) as handle:
        model = json.load(handle)["model"]
    assert (model["dtype_policy"], model["recompute"], model["use_segments"]) == (
        "mixed_bfloat16",
        True,
        True,
    )


def test_sagemakers_channels_cluster_and_model_dir_fill_in_the_flags(tmp_path, data, monkeypatch):
    # What SageMaker's drivers export: the channels, the model artifact directory, the hosts.
    monkeypatch.setenv("SM_CHANNEL_TRAIN", os.path.dirname(data["train"]))
    monkeypatch.setenv("SM_CHANNEL_EVAL", os.path.dirname(data["val"]))
    monkeypatch.setenv("SM_MODEL_DIR", str(tmp_path / "model"))
    monkeypatch.setenv("SM_HOSTS", '["algo-1"]')
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-1")
    monkeypatch.setenv("SM_NUM_GPUS", "0")
    model_dir = str(tmp_path / "checkpoints")  # on SageMaker: /opt/ml/checkpoints
    argv = [f"--model_dir={model_dir}", "--steps=2", "--global_batch_size=8", "--log_every=1"]
    assert train.main(argv) == 0
    assert [r["step"] for r in metrics(model_dir)] == [1, 2, 2]  # two steps, then the eval
    exported = sorted(os.listdir(os.path.join(model_dir, "export")))
    assert exported and sorted(os.listdir(tmp_path / "model")) == exported


def test_a_gpu_host_without_a_gpu_tensorflow_and_smddp_are_refused(tmp_path, data, capsys,
                                                                   monkeypatch):
    monkeypatch.setenv("SM_MODEL_DIR", str(tmp_path / "model"))
    monkeypatch.setenv("SM_CURRENT_HOST", "algo-1")
    monkeypatch.setenv("SM_NUM_GPUS", "8")
    assert train.main(flags(data, str(tmp_path / "run"), "--steps=2")) == 2
    assert "SM_NUM_GPUS=8" in capsys.readouterr().err
    monkeypatch.delenv("SM_MODEL_DIR")
    assert train.main([*flags(data, str(tmp_path / "s"), "--steps=2"), "--backend=smddp"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --backend=smddp is not supported") and "NCCL" in err
