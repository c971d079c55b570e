"""The specification becomes the SDK's ModelTrainer arguments (where the SDK is installed:
the launcher's environment, requirements-sagemaker.lock; CI's environment does not have it)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("sagemaker.train", reason="the SageMaker SDK: requirements-sagemaker.lock")

from trainer.sagemaker import sdk
from trainer.sagemaker.spec import JobOptions, job_spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_both_distributions_and_data_sources_become_sdk_objects(tmp_path):
    mpi = job_spec(JobOptions(image="i", train_data="s3://b/t", distribution="mpi",
                              processes_per_host=4, checkpoint_s3_uri="s3://b/c", spot=True))
    efs = job_spec(JobOptions(image="i", train_data="/t", efs_file_system_id="fs-1",
                              subnets=("s",), security_group_ids=("g",)))
    kwargs = sdk.model_trainer_kwargs(mpi, source_dir=str(tmp_path))
    assert kwargs["distributed"].process_count_per_node == 4
    assert kwargs["compute"].enable_managed_spot_training is True
    assert kwargs["stopping_condition"].max_wait_time_in_seconds == 864_000
    assert kwargs["input_data_config"][0].data_source.s3_uri == "s3://b/t/"
    assert kwargs["source_code"].entry_script == "pilepack_entry.py"
    kwargs = sdk.model_trainer_kwargs(efs, source_dir=str(tmp_path))
    assert "distributed" not in kwargs and kwargs["training_input_mode"] == "File"
    assert kwargs["input_data_config"][0].data_source.file_system_id == "fs-1"
    assert kwargs["networking"].subnets == ["s"]


def test_submitting_without_aws_configuration_ends_in_one_error_line(tmp_path):
    """The SDK's own check is a pydantic ValidationError traceback (no region) or botocore's
    NoCredentialsError (no credentials); the launcher says what to configure first."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
               AWS_EC2_METADATA_DISABLED="true", HOME=str(tmp_path))
    for extra in ({}, {"AWS_DEFAULT_REGION": "us-east-1"}):
        done = subprocess.run(
            [sys.executable, "-m", "trainer.sagemaker", "--image=i", "--train_data=s3://b/t"],
            cwd=REPO, env={**env, **extra}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "needs AWS configuration" in errors[0], done.stderr
