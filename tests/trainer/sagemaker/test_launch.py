"""``python -m trainer.sagemaker``: the dry run offline, flags checked, the SDK only to submit."""

import json
import os
import subprocess
import sys
import types

import pytest

from common.errors import ConfigError
from trainer.sagemaker import launch, spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LAUNCH = [
    "--image=123456789012.dkr.ecr.us-east-1.amazonaws.com/pilepack-train:2.21.0",
    "--train_data=s3://bucket/pile/train/",
    "--instance_count=2",
]


def test_dry_run_prints_the_specification(capsys):
    train = ["--preset=125m", "--steps=10", "--global_batch_size=64", "--bf16"]
    assert launch.main([*LAUNCH, "--dry_run", "--", *train]) == 0
    printed = json.loads(capsys.readouterr().out)
    options = spec.JobOptions(image=LAUNCH[0].split("=", 1)[1],
                              train_data="s3://bucket/pile/train/", instance_count=2)
    assert printed == spec.job_spec(options, train_flags=train)


def test_trainer_flags_are_checked_before_anything_is_submitted(capsys):
    with pytest.raises(SystemExit) as exited:
        launch.main([*LAUNCH, "--dry_run", "--", "--stpes=10", "--global_batch_size=8"])
    assert exited.value.code == 2
    assert "--stpes (did you mean --steps?)" in capsys.readouterr().err
    assert launch.main([*LAUNCH, "--dry_run", "--", "--steps=0", "--global_batch_size=8"]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    assert launch.main([*LAUNCH, "--spot", "--dry_run"]) == 2
    assert "--spot needs --checkpoint_s3_uri" in capsys.readouterr().err


def test_submitting_without_the_sdk_names_the_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sagemaker", None)  # not installed
    monkeypatch.delitem(sys.modules, "trainer.sagemaker.sdk", raising=False)
    assert launch.main([*LAUNCH, "--", "--steps=10", "--global_batch_size=8"]) == 2
    err = capsys.readouterr().err
    assert "pilepack[sagemaker]" in err and "requirements-sagemaker.lock" in err


def no_aws_configuration(monkeypatch) -> None:
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role either


def test_submitting_without_aws_configuration_is_one_line_saying_what_to_set(monkeypatch, capsys):
    no_aws_configuration(monkeypatch)
    sdk = types.ModuleType("trainer.sagemaker.sdk")  # installed, but never reached
    monkeypatch.setitem(sys.modules, "trainer.sagemaker.sdk", sdk)
    assert launch.main([*LAUNCH, "--", "--steps=10", "--global_batch_size=8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: submitting a job needs AWS config")
    assert "AWS_DEFAULT_REGION" in err and "AWS_ACCESS_KEY_ID" in err
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with pytest.raises(ConfigError, match="needs AWS configuration: credentials") as raised:
        launch.check_aws_configuration()
    assert "region" not in str(raised.value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example")
    launch.check_aws_configuration()


def test_the_launcher_imports_neither_tensorflow_nor_the_sdk():
    code = (
        "import sys, trainer.sagemaker.launch, trainer.sagemaker.spec, trainer.sagemaker.env; "
        "print(sorted(m for m in ('tensorflow', 'keras', 'sagemaker') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
