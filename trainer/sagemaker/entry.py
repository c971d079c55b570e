"""The training image's SageMaker entry point: the job's hyperparameters -> ``trainer.train``.

    python -m trainer.sagemaker.entry --steps 100 --bf16 true ...   # SageMaker's drivers
    train                                                           # docker run IMAGE train

SageMaker's drivers (what ``python -m trainer.sagemaker`` submits; under ``mpirun`` for the MPI
distribution) pass each hyperparameter as ``--key value``. Started as ``docker run IMAGE train``
(the image's ``train`` script) it gets no arguments and reads the job's
``hyperparameters.json``. Either way the hyperparameters become ``trainer.train`` flags
(``true`` -> ``--key``, ``false`` -> ``--no-key``), and ``trainer.train`` adds the defaults that
SageMaker's conventions give (channels, checkpoints, model directory, cluster).
"""

from __future__ import annotations

import os
import sys

from common import cli
from trainer.sagemaker import env as sagemaker_env


def train_argv(argv: list[str], *, env: dict, config_dir: str) -> list[str]:
    """``trainer.train``'s flags for this container's arguments (or, with none, its job's
    hyperparameters)."""
    if argv:
        hyperparameters = sagemaker_env.hyperparameters_from_args(argv)
    else:
        job = sagemaker_env.detect(env, config_dir=config_dir)
        hyperparameters = dict(job.hyperparameters) if job else {}
    return sagemaker_env.train_flags(hyperparameters)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    flags: list[str] = []

    def convert():
        flags.extend(
            train_argv(argv, env=dict(os.environ), config_dir=sagemaker_env.CONFIG_DIR)
        )

    status = cli.run_main(convert)
    if status:
        return status
    from trainer import train  # TensorFlow: only once the arguments are known to be usable

    print("python -m trainer.train " + " ".join(flags), flush=True)
    return train.main(flags)


if __name__ == "__main__":
    sys.exit(main())
