"""``trainer.sagemaker.spec``'s plain data -> the SageMaker Python SDK v3's ``ModelTrainer``.

The one module that imports the SDK (``pip install 'pilepack[sagemaker]'``); only
``python -m trainer.sagemaker`` without ``--dry_run`` imports it.
"""

from __future__ import annotations

from sagemaker.core.training.configs import (
    CheckpointConfig,
    Compute,
    FileSystemDataSource,
    InputData,
    Networking,
    OutputDataConfig,
    S3DataSource,
    SourceCode,
    StoppingCondition,
)
from sagemaker.train import ModelTrainer
from sagemaker.train.distributed import MPI

DATA_SOURCES = {"s3_data_source": S3DataSource, "file_system_data_source": FileSystemDataSource}


def _present(values: dict) -> dict:
    """The SDK's config objects tell "unset" from None: leave unset what the spec leaves out."""
    return {key: value for key, value in values.items() if value is not None}


def input_data(channel: dict) -> InputData:
    (kind, source), = channel["data_source"].items()
    return InputData(channel_name=channel["channel_name"], data_source=DATA_SOURCES[kind](**source))


def model_trainer_kwargs(spec: dict, *, source_dir: str) -> dict:
    """``ModelTrainer``'s keyword arguments; ``source_dir`` holds the spec's entry script."""

    def optional(cls, key):
        return cls(**_present(spec[key])) if spec[key] else None

    distributed = spec["distributed"]
    return _present(
        {
            "base_job_name": spec["base_job_name"],
            "role": spec["role"],
            "training_image": spec["training_image"],
            "source_code": SourceCode(source_dir=source_dir, **spec["source_code"]),
            "distributed": MPI(**_present(distributed["mpi"])) if distributed else None,
            "compute": Compute(**spec["compute"]),
            "stopping_condition": StoppingCondition(**_present(spec["stopping_condition"])),
            "networking": optional(Networking, "networking"),
            "training_input_mode": spec["training_input_mode"],
            "input_data_config": [input_data(channel) for channel in spec["input_data_config"]],
            "checkpoint_config": optional(CheckpointConfig, "checkpoint_config"),
            "output_data_config": optional(OutputDataConfig, "output_data_config"),
            "environment": spec["environment"],
            "hyperparameters": spec["hyperparameters"],
        }
    )


def model_trainer(spec: dict, *, source_dir: str) -> ModelTrainer:
    """The ``ModelTrainer`` (this resolves the SDK session and role: AWS credentials)."""
    return ModelTrainer(**model_trainer_kwargs(spec, source_dir=source_dir))
