"""The SageMaker job specification, offline: both distributions, both data sources."""

import pytest

from trainer.sagemaker.spec import ENTRY_SCRIPT, JobOptions, job_spec, s3_prefix

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pilepack-train:2.21.0"


def options(**overrides):
    return JobOptions(**{"image": IMAGE, "train_data": "s3://bucket/pile/train/", **overrides})


def test_multiworker_on_s3_in_fastfile_mode():
    spec = job_spec(
        options(eval_data="s3://bucket/pile/val/manifest.json", instance_count=10),
        train_flags=["--preset=1.3b", "--steps", "1000", "--bf16"],
    )
    assert spec["training_image"] == IMAGE and spec["distributed"] is None
    assert spec["source_code"] == {"entry_script": ENTRY_SCRIPT}
    assert spec["compute"] == {
        "instance_type": "ml.p4d.24xlarge",
        "instance_count": 10,
        "volume_size_in_gb": 200,
        "enable_managed_spot_training": False,
    }
    assert spec["training_input_mode"] == "FastFile"
    assert spec["input_data_config"] == [
        {
            "channel_name": name,
            "data_source": {
                "s3_data_source": {
                    "s3_data_type": "S3Prefix",
                    "s3_uri": uri,
                    "s3_data_distribution_type": "FullyReplicated",
                }
            },
        }
        for name, uri in [("train", "s3://bucket/pile/train/"), ("eval", "s3://bucket/pile/val/")]
    ]
    assert spec["hyperparameters"] == {
        "backend": "multiworker",
        "preset": "1.3b",
        "steps": "1000",
        "bf16": "true",
    }
    assert spec["checkpoint_config"] is None and spec["networking"] is None
    assert spec["stopping_condition"] == {
        "max_runtime_in_seconds": 432_000,
        "max_wait_time_in_seconds": None,
    }


def test_mpi_on_efs_with_spot_and_checkpoints():
    spec = job_spec(
        options(
            distribution="mpi",
            processes_per_host=8,
            train_data="/pile/train",
            efs_file_system_id="fs-0123",
            subnets=("subnet-a", "subnet-b"),
            security_group_ids=("sg-1",),
            checkpoint_s3_uri="s3://bucket/runs/a/checkpoints",
            spot=True,
            max_run_s=3600,
        )
    )
    assert spec["distributed"] == {"mpi": {"process_count_per_node": 8}}
    assert spec["hyperparameters"] == {"backend": "horovod"}
    assert spec["training_input_mode"] == "File"  # EFS channels are mounted, not streamed
    assert spec["input_data_config"] == [
        {
            "channel_name": "train",
            "data_source": {
                "file_system_data_source": {
                    "file_system_id": "fs-0123",
                    "file_system_type": "EFS",
                    "file_system_access_mode": "ro",
                    "directory_path": "/pile/train",
                }
            },
        }
    ]
    assert spec["networking"] == {"subnets": ["subnet-a", "subnet-b"],
                                  "security_group_ids": ["sg-1"]}
    assert spec["checkpoint_config"] == {
        "s3_uri": "s3://bucket/runs/a/checkpoints",
        "local_path": "/opt/ml/checkpoints",
    }
    assert spec["compute"]["enable_managed_spot_training"] is True
    assert spec["stopping_condition"] == {
        "max_runtime_in_seconds": 3600,
        "max_wait_time_in_seconds": 7200,  # 0: twice the run time
    }


def test_s3_prefixes_name_the_split_directory():
    assert s3_prefix("s3://b/pile/train") == "s3://b/pile/train/"
    assert s3_prefix("s3://b/pile/train/manifest.json") == "s3://b/pile/train/"


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"spot": True}, "--spot needs --checkpoint_s3_uri"),
        ({"spot": True, "checkpoint_s3_uri": "s3://b/c", "max_wait_s": 10},
         "must be >= --max_run_s"),
        ({"efs_file_system_id": "fs-1", "train_data": "/pile/train"}, "needs --subnets"),
        ({"train_data": "/pile/train"}, "s3:// prefix"),
        (
            {"efs_file_system_id": "fs-1", "subnets": ("s",), "security_group_ids": ("g",)},
            "directory inside the file system",
        ),
        ({"processes_per_host": 4}, "is for --distribution=mpi"),
        ({"instance_count": 0}, "--instance_count must be >= 1"),
        ({"checkpoint_s3_uri": "bucket/c"}, "not an s3:// URI"),
    ],
)
def test_bad_options_are_named(overrides, message):
    with pytest.raises(ValueError, match=message):
        options(**overrides)


def test_the_backend_follows_the_distribution():
    with pytest.raises(ValueError, match="use --distribution instead"):
        job_spec(options(), train_flags=["--backend=single"])
