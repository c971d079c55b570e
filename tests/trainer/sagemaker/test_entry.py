"""The image's SageMaker entry turns the job's hyperparameters into trainer.train flags."""

import json

from trainer.sagemaker import entry
from trainer.sagemaker.entry import train_argv


def test_arguments_from_sagemakers_drivers():
    argv = ["--preset", "125m", "--steps", "100", "--bf16", "true", "--xla", "false"]
    assert train_argv(argv, env={}, config_dir="/nonexistent") == [
        "--preset=125m",
        "--steps=100",
        "--bf16",
        "--no-xla",
    ]


def test_without_arguments_the_jobs_hyperparameters_file(tmp_path):
    (tmp_path / "resourceconfig.json").write_text(
        json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]})
    )
    (tmp_path / "hyperparameters.json").write_text(json.dumps({"steps": "7", "bf16": "true"}))
    assert train_argv([], env={}, config_dir=str(tmp_path)) == ["--steps=7", "--bf16"]
    assert train_argv([], env={}, config_dir=str(tmp_path / "none")) == []


def test_arguments_that_are_not_pairs_exit_2(capsys):
    assert entry.main(["--steps", "100", "--bf16"]) == 2
    assert "--key value pairs" in capsys.readouterr().err
