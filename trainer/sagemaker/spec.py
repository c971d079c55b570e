"""A SageMaker training job for ``trainer.train``, as plain data (no SDK, no TensorFlow).

``job_spec`` returns the arguments of the SageMaker Python SDK v3's
``sagemaker.train.ModelTrainer`` as JSON-ready dicts (the nested dicts are its config objects:
``compute`` -> ``Compute``, ``input_data_config`` -> ``InputData``, ``distributed.mpi`` ->
``MPI``, ...). ``python -m trainer.sagemaker --dry_run`` prints it; only submitting turns it
into SDK objects. The job runs the training image (``docker/Dockerfile.train``) through the
SDK's drivers, which start ``ENTRY_SCRIPT`` with the hyperparameters as arguments: on every host
for ``multiworker`` (tf.distribute ``MultiWorkerMirroredStrategy``, NCCL between GPUs, the
cluster from SageMaker's ``SM_HOSTS``), or once per GPU under ``mpirun`` for ``mpi`` (Horovod).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from common.errors import ConfigError
from common.flags import check_choices, flag, require
from trainer.sagemaker import env as sagemaker_env

DISTRIBUTIONS = ("multiworker", "mpi")
BACKEND = {"multiworker": "multiworker", "mpi": "horovod"}  # --distribution -> --backend
ENTRY_SCRIPT = "pilepack_entry.py"
# What the submit path uploads as the job's source code: the trainer itself is in the image.
ENTRY_SCRIPT_TEXT = '''"""Written by python -m trainer.sagemaker: runs trainer.sagemaker.entry."""
import sys

from trainer.sagemaker import entry

sys.exit(entry.main(sys.argv[1:]))
'''
# trainer.train flags that the job sets itself (SageMaker's conventions, or --distribution).
OWNED_FLAGS = {"backend": "--distribution"}


@dataclasses.dataclass(frozen=True)
class JobOptions:
    """One training job: image, machines, distribution, data, checkpoints, stopping."""

    image: str = flag(help="training image URI (ECR), built from docker/Dockerfile.train")
    train_data: str = flag(
        help="the training split: its s3:// prefix (manifest.json and shards, read in "
        "FastFile mode), or with --efs_file_system_id its directory in the file system",
    )
    eval_data: str = flag("", help="the evaluation split, as --train_data; empty: none")
    efs_file_system_id: str = flag(
        "", help="read the splits from this EFS file system (needs --subnets and "
        "--security_group_ids); empty: from S3"
    )
    subnets: tuple[str, ...] = flag((), help="VPC subnets of the job (EFS needs them)")
    security_group_ids: tuple[str, ...] = flag(
        (), help="VPC security groups of the job (EFS needs them)"
    )
    instance_type: str = flag("ml.p4d.24xlarge", help="SageMaker instance type")
    instance_count: int = flag(1, help="instances (hosts)")
    volume_size_gb: int = flag(200, help="storage volume per instance, GB")
    distribution: str = flag(
        "multiworker",
        help="multiworker: tf.distribute across hosts, NCCL between GPUs; "
        "mpi: Horovod under mpirun (an image with Horovod)",
        choices=DISTRIBUTIONS,
    )
    processes_per_host: int = flag(0, help="mpi: processes per host (0: one per GPU)")
    checkpoint_s3_uri: str = flag(
        "", help="where SageMaker syncs /opt/ml/checkpoints (the run's --model_dir) and "
        "restores it from on a restart; empty: no checkpoints kept"
    )
    output_s3_uri: str = flag(
        "", help="where SageMaker puts the job's model.tar.gz; empty: the SDK's default bucket"
    )
    spot: bool = flag(False, help="managed spot instances (needs --checkpoint_s3_uri)")
    max_run_s: int = flag(432_000, help="stop training after this many seconds")
    max_wait_s: int = flag(
        0, help="--spot: seconds to wait for spot capacity plus training, >= --max_run_s "
        "(0: twice --max_run_s)"
    )
    role: str = flag("", help="IAM role ARN of the job; empty: the SDK's default execution role")
    job_name: str = flag("pilepack", help="base name of the training job")

    def __post_init__(self):
        check_choices(self)
        for name in ("instance_count", "volume_size_gb", "max_run_s"):
            require(getattr(self, name) >= 1, f"--{name} must be >= 1, got {getattr(self, name)}")
        require(self.processes_per_host >= 0,
                f"--processes_per_host must be >= 0, got {self.processes_per_host}")
        require(not self.processes_per_host or self.distribution == "mpi",
                "--processes_per_host is for --distribution=mpi; multiworker runs one process "
                "per host that trains on all of its GPUs")
        for name in ("train_data", "eval_data"):
            value = getattr(self, name)
            if not value:
                continue
            if self.efs_file_system_id:
                require(value.startswith("/"), f"--{name}={value!r}: with --efs_file_system_id "
                        "give the split's directory inside the file system, e.g. /pile/train")
            else:
                require(value.startswith("s3://"), f"--{name}={value!r}: give the split's "
                        "s3:// prefix (or its directory on EFS with --efs_file_system_id)")
        require(not self.efs_file_system_id or (self.subnets and self.security_group_ids),
                "--efs_file_system_id needs --subnets and --security_group_ids: the job runs "
                "in the VPC that reaches the file system")
        for name in ("checkpoint_s3_uri", "output_s3_uri"):
            value = getattr(self, name)
            require(not value or value.startswith("s3://"),
                    f"--{name}={value!r} is not an s3:// URI")
        require(not self.spot or self.checkpoint_s3_uri,
                "--spot needs --checkpoint_s3_uri: an interrupted spot job resumes from the "
                "checkpoints SageMaker synced there (without them it restarts at step 0)")
        require(not self.spot or self.max_wait >= self.max_run_s,
                f"--max_wait_s={self.max_wait_s} must be >= --max_run_s={self.max_run_s}")

    @property
    def max_wait(self) -> int:
        return self.max_wait_s or 2 * self.max_run_s


def s3_prefix(uri: str) -> str:
    """A split's S3 prefix (SageMaker mounts its objects at the channel's directory): the
    manifest's directory, ending in ``/`` so that ``s3://b/train`` does not match ``train2/``."""
    if uri.endswith(".json"):
        uri = uri.rsplit("/", 1)[0]
    return uri.rstrip("/") + "/"


def channel(options: JobOptions, *, name: str, location: str) -> dict:
    """An ``InputData``: the split on S3 (every host sees all of it; FastFile reads lazily) or
    a directory of the EFS file system."""
    if options.efs_file_system_id:
        source = {
            "file_system_data_source": {
                "file_system_id": options.efs_file_system_id,
                "file_system_type": "EFS",
                "file_system_access_mode": "ro",
                "directory_path": location,
            }
        }
    else:
        source = {
            "s3_data_source": {
                "s3_data_type": "S3Prefix",
                "s3_uri": s3_prefix(location),
                "s3_data_distribution_type": "FullyReplicated",  # each rank picks its shards
            }
        }
    return {"channel_name": name, "data_source": source}


def job_hyperparameters(options: JobOptions, train_flags: Sequence[str]) -> dict[str, str]:
    """``trainer.train``'s flags as the job's hyperparameters, with the backend the
    distribution needs."""
    passed = sagemaker_env.hyperparameters_from_flags(train_flags)
    for name, instead in OWNED_FLAGS.items():
        if name in passed:
            raise ConfigError(f"--{name} is set by the launcher: use {instead} instead")
    return {"backend": BACKEND[options.distribution], **passed}


def job_spec(options: JobOptions, *, train_flags: Sequence[str] = ()) -> dict:
    """``ModelTrainer``'s arguments for ``options``, as plain data; ``train_flags`` are
    ``trainer.train`` flags, passed on as hyperparameters."""
    channels = [channel(options, name=sagemaker_env.TRAIN_CHANNEL, location=options.train_data)]
    if options.eval_data:
        channels.append(channel(options, name=sagemaker_env.EVAL_CHANNELS[0],
                                location=options.eval_data))
    mpi = {"process_count_per_node": options.processes_per_host or None}
    networking = None
    if options.subnets or options.security_group_ids:
        networking = {
            "subnets": list(options.subnets),
            "security_group_ids": list(options.security_group_ids),
        }
    return {
        "base_job_name": options.job_name,
        "role": options.role or None,
        "training_image": options.image,
        "source_code": {"entry_script": ENTRY_SCRIPT},
        "distributed": {"mpi": mpi} if options.distribution == "mpi" else None,
        "compute": {
            "instance_type": options.instance_type,
            "instance_count": options.instance_count,
            "volume_size_in_gb": options.volume_size_gb,
            "enable_managed_spot_training": options.spot,
        },
        "stopping_condition": {
            "max_runtime_in_seconds": options.max_run_s,
            "max_wait_time_in_seconds": options.max_wait if options.spot else None,
        },
        "networking": networking,
        "training_input_mode": "File" if options.efs_file_system_id else "FastFile",
        "input_data_config": channels,
        "checkpoint_config": (
            {"s3_uri": options.checkpoint_s3_uri, "local_path": sagemaker_env.CHECKPOINT_DIR}
            if options.checkpoint_s3_uri
            else None
        ),
        "output_data_config": (
            {"s3_output_path": options.output_s3_uri} if options.output_s3_uri else None
        ),
        "environment": {},
        "hyperparameters": job_hyperparameters(options, train_flags),
    }
