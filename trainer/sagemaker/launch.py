"""Launch ``trainer.train`` as a SageMaker training job: ``python -m trainer.sagemaker``.

    python -m trainer.sagemaker --image=ACCOUNT.dkr.ecr.REGION.amazonaws.com/pilepack-train:TAG \\
        --train_data=s3://bucket/pile/train/ --eval_data=s3://bucket/pile/val/ \\
        --instance_type=ml.p5.48xlarge --instance_count=10 \\
        --checkpoint_s3_uri=s3://bucket/runs/1.3b/checkpoints --spot --max_wait_s=864000 \\
        -- --preset=1.3b --steps=100000 --global_batch_size=1280 --bf16 --recompute --xla

Flags after ``--`` are ``trainer.train``'s and travel as the job's hyperparameters; checked
here when TensorFlow is installed, else by the job when it starts. ``--dry_run`` prints the job
specification (``trainer.sagemaker.spec``) as JSON and needs neither credentials nor the SDK;
submitting needs the SageMaker Python SDK v3: ``pip install 'pilepack[sagemaker]'``, or its own
environment from ``requirements-sagemaker.lock`` (docs/sagemaker.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import os
import sys
import tempfile

from common import cli
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from trainer.sagemaker import env as sagemaker_env
from trainer.sagemaker import spec as sagemaker_spec
from trainer.sagemaker.spec import JobOptions

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LaunchFlags:
    job: JobOptions
    dry_run: bool = flag(False, help="print the job specification as JSON and exit")
    wait: bool = flag(False, help="wait for the job to end, printing its logs")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.sagemaker", description=__doc__)
    add_flags(parser, LaunchFlags)
    return parser


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the launcher's flags, ``trainer.train``'s flags after ``--``)."""
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1 :]
    return argv, []


def check_train_flags(spec: dict) -> bool:
    """Parse the job's ``trainer.train`` command line as the job will, when TensorFlow is here
    (a typo then costs no cluster start); return whether it was checked."""
    if importlib.util.find_spec("tensorflow") is None:
        return False
    from common.cli import import_tensorflow

    import_tensorflow()  # first, quietly: trainer.train imports it
    from trainer import train

    channels = {c["channel_name"]: f"{sagemaker_env.DATA_DIR}/{c['channel_name']}"
                for c in spec["input_data_config"]}
    job = sagemaker_env.SageMakerEnv(
        channels=channels,
        model_dir=sagemaker_env.MODEL_DIR,
        checkpoint_dir=sagemaker_env.CHECKPOINT_DIR,
        hosts=("algo-1",),
        current_host="algo-1",
    )
    argv = job.train_defaults() + sagemaker_env.train_flags(spec["hyperparameters"])
    from_args(train.TrainFlags, train.build_parser().parse_args(argv))
    return True


def check_aws_configuration() -> None:
    """ConfigError saying what to configure unless AWS's standard chain (environment,
    ``~/.aws/config`` and ``credentials``, instance role) gives a region and credentials; the
    SDK's own check ends in a pydantic ValidationError traceback."""
    import botocore.session  # the SDK's boto3 reads the same chain

    session = botocore.session.get_session()
    missing = []
    if not session.get_config_variable("region"):
        missing.append("a region where SageMaker runs (AWS_DEFAULT_REGION=us-east-1, or "
                       "`aws configure`)")
    if session.get_credentials() is None:
        missing.append("credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile "
                       "named by AWS_PROFILE, `aws configure`, or an instance role)")
    if missing:
        raise ConfigError("submitting a job needs AWS configuration: " + "; ".join(missing)
                          + "; --dry_run needs none")


def submit(spec: dict, *, wait: bool) -> str:
    """Create the training job with the SageMaker Python SDK; return its name."""
    try:
        from trainer.sagemaker import sdk as sagemaker_sdk
    except ImportError as err:
        raise ConfigError(
            f"submitting a job needs the SageMaker Python SDK v3 ({err}): pip install "
            f"'pilepack[sagemaker]', or use an environment from requirements-sagemaker.lock "
            f"(docs/sagemaker.md); --dry_run needs neither"
        ) from err
    check_aws_configuration()
    with tempfile.TemporaryDirectory(prefix="pilepack-sagemaker-") as code_dir:
        with open(os.path.join(code_dir, sagemaker_spec.ENTRY_SCRIPT), "w") as handle:
            handle.write(sagemaker_spec.ENTRY_SCRIPT_TEXT)
        trainer = sagemaker_sdk.model_trainer(spec, source_dir=code_dir)
        trainer.train(wait=wait, logs=wait)
        return trainer._latest_training_job.training_job_name  # the SDK keeps no public handle


def main(argv: list[str] | None = None) -> int:
    own, train_flags = split_argv(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(own)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    def body():
        flags = from_args(LaunchFlags, args)
        spec = sagemaker_spec.job_spec(flags.job, train_flags=train_flags)
        if not check_train_flags(spec):
            log.info("trainer.train's flags not checked here (no TensorFlow): the job will")
        if flags.dry_run:
            print(json.dumps(spec, indent=2, sort_keys=True))
            return 0
        print(submit(spec, wait=flags.wait))
        return 0

    return cli.run_main(body)


if __name__ == "__main__":
    sys.exit(main())
