"""The specification becomes the SDK's ModelTrainer arguments (where the SDK is installed:
the launcher's environment, requirements-sagemaker.lock; CI's environment does not have it)."""

import pytest

pytest.importorskip("sagemaker.train", reason="the SageMaker SDK: requirements-sagemaker.lock")

from trainer import sagemaker_sdk
from trainer.sagemaker_spec import JobOptions, job_spec


def test_both_distributions_and_data_sources_become_sdk_objects(tmp_path):
    mpi = job_spec(JobOptions(image="i", train_data="s3://b/t", distribution="mpi",
                              processes_per_host=4, checkpoint_s3_uri="s3://b/c", spot=True))
    efs = job_spec(JobOptions(image="i", train_data="/t", efs_file_system_id="fs-1",
                              subnets=("s",), security_group_ids=("g",)))
    kwargs = sagemaker_sdk.model_trainer_kwargs(mpi, source_dir=str(tmp_path))
    assert kwargs["distributed"].process_count_per_node == 4
    assert kwargs["compute"].enable_managed_spot_training is True
    assert kwargs["stopping_condition"].max_wait_time_in_seconds == 864_000
    assert kwargs["input_data_config"][0].data_source.s3_uri == "s3://b/t/"
    assert kwargs["source_code"].entry_script == "pilepack_entry.py"
    kwargs = sagemaker_sdk.model_trainer_kwargs(efs, source_dir=str(tmp_path))
    assert "distributed" not in kwargs and kwargs["training_input_mode"] == "File"
    assert kwargs["input_data_config"][0].data_source.file_system_id == "fs-1"
    assert kwargs["networking"].subnets == ["s"]
