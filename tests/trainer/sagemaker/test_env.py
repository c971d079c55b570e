"""SageMaker's in-container conventions, from SM_* variables and from SageMaker's config files."""

import json

import pytest

from trainer.sagemaker.env import (
    SageMakerEnv,
    detect,
    hyperparameters_from_args,
    hyperparameters_from_flags,
    train_flags,
)

# As the SDK's drivers (sagemaker.train container_drivers/scripts/environment.py) export them.
DRIVER_ENV = {
    "SM_MODEL_DIR": "/opt/ml/model",
    "SM_CHANNEL_TRAIN": "/opt/ml/input/data/train",
    "SM_CHANNEL_EVAL": "/opt/ml/input/data/eval",
    "SM_CHANNELS": '["eval", "train"]',
    "SM_HOSTS": '["algo-2", "algo-1"]',
    "SM_CURRENT_HOST": "algo-2",
    "SM_NUM_GPUS": "8",
    "SM_HPS": '{"preset": "125m", "steps": 100, "bf16": true}',
}


def test_driver_variables():
    env = detect(DRIVER_ENV, config_dir="/nonexistent")
    assert env == SageMakerEnv(
        channels={"train": "/opt/ml/input/data/train", "eval": "/opt/ml/input/data/eval"},
        model_dir="/opt/ml/model",
        checkpoint_dir="/opt/ml/checkpoints",
        hosts=("algo-1", "algo-2"),
        current_host="algo-2",
        num_gpus=8,
        hyperparameters={"preset": "125m", "steps": "100", "bf16": "true"},
    )
    assert env.train_defaults() == [
        "--model_dir=/opt/ml/checkpoints",
        "--export_dir=/opt/ml/model",
        "--train_manifest=/opt/ml/input/data/train",
        "--eval_manifest=/opt/ml/input/data/eval",
    ]
    assert env.cluster_env() == {"SM_HOSTS": '["algo-1", "algo-2"]', "SM_CURRENT_HOST": "algo-2"}


def test_config_files_when_nothing_exported_them(tmp_path):
    # `docker run IMAGE train` as SageMaker starts a container: only /opt/ml/input/config/*.json
    config = tmp_path / "input" / "config"
    config.mkdir(parents=True)
    (config / "resourceconfig.json").write_text(
        json.dumps({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]})
    )
    (config / "inputdataconfig.json").write_text(
        json.dumps({"train": {"TrainingInputMode": "FastFile"}, "validation": {}})
    )
    (config / "hyperparameters.json").write_text(json.dumps({"steps": "10", "xla": "false"}))
    env = detect({}, config_dir=str(config))
    data = tmp_path / "input" / "data"
    assert env.channels == {"train": str(data / "train"), "validation": str(data / "validation")}
    assert (env.hosts, env.current_host, env.num_gpus) == (("algo-1", "algo-2"), "algo-1", None)
    assert env.hyperparameters == {"steps": "10", "xla": "false"}
    assert f"--eval_manifest={data / 'validation'}" in env.train_defaults()


def test_outside_sagemaker_there_is_nothing(tmp_path):
    assert detect({"SM_HOSTS": '["a", "b"]'}, config_dir=str(tmp_path)) is None


def test_bad_variables_are_named():
    with pytest.raises(ValueError, match="SM_HOSTS is not valid JSON"):
        detect({**DRIVER_ENV, "SM_HOSTS": "algo-1,algo-2"})
    with pytest.raises(ValueError, match="SM_NUM_GPUS"):
        detect({**DRIVER_ENV, "SM_NUM_GPUS": "eight"})


def test_a_gpu_host_must_give_tensorflow_its_gpus():
    env = detect(DRIVER_ENV, config_dir="/nonexistent")
    env.check_gpus(visible=8)
    with pytest.raises(ValueError, match="SM_NUM_GPUS=8 .* docker/Dockerfile.train"):
        env.check_gpus(visible=0)
    detect({**DRIVER_ENV, "SM_NUM_GPUS": "0"}).check_gpus(visible=0)  # a CPU instance


def test_hyperparameters_round_trip_through_flags():
    flags = ["--preset=125m", "--steps", "100", "--bf16", "--no-xla", "--learning_rate=6e-4"]
    hps = hyperparameters_from_flags(flags)
    assert hps == {
        "preset": "125m",
        "steps": "100",
        "bf16": "true",
        "xla": "false",
        "learning_rate": "6e-4",
    }
    assert train_flags(hps) == [
        "--preset=125m",
        "--steps=100",
        "--bf16",
        "--no-xla",
        "--learning_rate=6e-4",
    ]
    # the drivers hand them over as --key value pairs
    argv = ["--preset", "125m", "--bf16", "true", "--xla", "false"]
    assert train_flags(hyperparameters_from_args(argv)) == ["--preset=125m", "--bf16", "--no-xla"]


def test_malformed_hyperparameters_are_named():
    with pytest.raises(ValueError, match="--key value pairs"):
        hyperparameters_from_args(["--steps", "1", "--bf16"])
    with pytest.raises(ValueError, match="expected a trainer.train flag"):
        hyperparameters_from_flags(["steps=3"])

