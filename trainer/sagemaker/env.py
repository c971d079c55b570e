"""SageMaker's in-container conventions, turned into what ``trainer.train`` needs.

SageMaker mounts input channel ``NAME`` at ``/opt/ml/input/data/NAME``, uploads
``/opt/ml/model`` as the job's model artifact, syncs ``/opt/ml/checkpoints`` with the job's
checkpoint S3 URI (restoring it when a spot job restarts) and describes the cluster in
``/opt/ml/input/config/*.json``. The SDK's drivers (``ModelTrainer`` with ``SourceCode``)
export the same facts as ``SM_*`` variables: ``SM_CHANNEL_<NAME>``, ``SM_MODEL_DIR``,
``SM_HOSTS``, ``SM_CURRENT_HOST``, ``SM_NUM_GPUS``. ``detect`` reads those, else the config
files, so the training image also runs when SageMaker starts it as ``docker run IMAGE train``.

Hyperparameters reach the container as ``--key value`` pairs (from the drivers; booleans as
``true``/``false``) or as ``hyperparameters.json`` (strings); ``train_flags`` turns them into
``trainer.train`` flags and ``hyperparameters_from_flags`` is its inverse, for the launcher.

No TensorFlow and no SageMaker SDK here: the launcher (``trainer.sagemaker``) imports it too.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence

from common.errors import ConfigError

CONFIG_DIR = "/opt/ml/input/config"
DATA_DIR = "/opt/ml/input/data"
MODEL_DIR = "/opt/ml/model"
CHECKPOINT_DIR = "/opt/ml/checkpoints"
TRAIN_CHANNEL = "train"
EVAL_CHANNELS = ("eval", "validation", "val")  # the first one present is the eval split
CHANNEL_PREFIX = "SM_CHANNEL_"


@dataclasses.dataclass(frozen=True)
class SageMakerEnv:
    """One SageMaker training container's view of its job.

    Attributes:
        channels: channel name (lower case) -> the directory SageMaker mounted it at.
        model_dir: uploaded as the job's model artifact when training ends (SM_MODEL_DIR).
        checkpoint_dir: synced with the job's checkpoint S3 URI, restored on a spot restart.
        hosts: every host of the job, sorted (SM_HOSTS); the first is the chief.
        current_host: this container's host (SM_CURRENT_HOST).
        num_gpus: GPUs SageMaker found on this host (SM_NUM_GPUS); None when not reported.
        hyperparameters: the job's hyperparameters, as strings (hyperparameters.json).
    """

    channels: Mapping[str, str]
    model_dir: str
    checkpoint_dir: str
    hosts: tuple[str, ...]
    current_host: str
    num_gpus: int | None = None
    hyperparameters: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def cluster_env(self) -> dict[str, str]:
        """SM_HOSTS / SM_CURRENT_HOST, as ``trainer.distribute`` reads the cluster."""
        return {"SM_HOSTS": json.dumps(list(self.hosts)), "SM_CURRENT_HOST": self.current_host}

    def train_defaults(self) -> list[str]:
        """``trainer.train`` flags these conventions imply; flags given later override them."""
        flags = [f"--model_dir={self.checkpoint_dir}", f"--export_dir={self.model_dir}"]
        if TRAIN_CHANNEL in self.channels:
            flags.append(f"--train_manifest={self.channels[TRAIN_CHANNEL]}")
        for name in EVAL_CHANNELS:
            if name in self.channels:
                flags.append(f"--eval_manifest={self.channels[name]}")
                break
        return flags

    def check_gpus(self, *, visible: int) -> None:
        """Refuse to train on the CPU of a GPU host: SageMaker saw GPUs, TensorFlow does not."""
        if self.num_gpus and not visible:
            raise ConfigError(
                f"SageMaker reports SM_NUM_GPUS={self.num_gpus} on {self.current_host} but "
                f"TensorFlow sees no GPU: the image's TensorFlow lacks CUDA support; build "
                f"the training image from docker/Dockerfile.train"
            )


def detect(env: Mapping[str, str], *, config_dir: str = CONFIG_DIR) -> SageMakerEnv | None:
    """The SageMaker job this process runs in: from ``SM_*`` variables when SageMaker's
    drivers set them, else from ``config_dir``'s files, else None (not on SageMaker)."""
    if "SM_MODEL_DIR" in env or "SM_TRAINING_ENV" in env:
        return _from_variables(env)
    if os.path.exists(os.path.join(config_dir, "resourceconfig.json")):
        return _from_config_files(config_dir)
    return None


def _json(text: str, *, name: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{name} is not valid JSON ({err}): {text[:200]!r}") from err


def _from_variables(env: Mapping[str, str]) -> SageMakerEnv:
    channels = {
        key[len(CHANNEL_PREFIX) :].lower(): value
        for key, value in env.items()
        if key.startswith(CHANNEL_PREFIX)
    }
    hosts = tuple(_json(env.get("SM_HOSTS", "[]"), name="SM_HOSTS"))
    num_gpus = env.get("SM_NUM_GPUS")
    if num_gpus is not None and not num_gpus.isdigit():
        raise ConfigError(f"SM_NUM_GPUS is not a count of GPUs: {num_gpus!r}")
    hyperparameters = _json(env.get("SM_HPS", "{}"), name="SM_HPS")
    return SageMakerEnv(
        channels=channels,
        model_dir=env.get("SM_MODEL_DIR", MODEL_DIR),
        checkpoint_dir=CHECKPOINT_DIR,
        hosts=tuple(sorted(hosts)),
        current_host=env.get("SM_CURRENT_HOST", ""),
        num_gpus=None if num_gpus is None else int(num_gpus),
        hyperparameters={key: _as_string(value) for key, value in hyperparameters.items()},
    )


def _read_json(path: str):
    with open(path, encoding="utf-8") as handle:
        return _json(handle.read(), name=path)


def _from_config_files(config_dir: str) -> SageMakerEnv:
    resource = _read_json(os.path.join(config_dir, "resourceconfig.json"))
    channels_path = os.path.join(config_dir, "inputdataconfig.json")
    hyper_path = os.path.join(config_dir, "hyperparameters.json")
    channel_names = _read_json(channels_path) if os.path.exists(channels_path) else {}
    hyperparameters = _read_json(hyper_path) if os.path.exists(hyper_path) else {}
    data_dir = os.path.join(os.path.dirname(config_dir), "data")
    return SageMakerEnv(
        channels={name.lower(): os.path.join(data_dir, name) for name in channel_names},
        model_dir=MODEL_DIR,
        checkpoint_dir=CHECKPOINT_DIR,
        hosts=tuple(sorted(resource["hosts"])),
        current_host=resource["current_host"],
        hyperparameters={key: _as_string(value) for key, value in hyperparameters.items()},
    )


def _as_string(value) -> str:
    """A hyperparameter as SageMaker's drivers print it: strings as they are, others as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def hyperparameters_from_args(argv: Sequence[str]) -> dict[str, str]:
    """``["--steps", "100", "--bf16", "true"]`` (how SageMaker's drivers pass them) -> dict."""
    if len(argv) % 2 or any(not key.startswith("--") for key in argv[::2]):
        raise ConfigError(
            f"expected SageMaker's hyperparameters as --key value pairs, got {' '.join(argv)}"
        )
    return {key[2:]: value for key, value in zip(argv[::2], argv[1::2])}


def train_flags(hyperparameters: Mapping[str, str]) -> list[str]:
    """Hyperparameters -> ``trainer.train`` flags: ``true`` -> ``--name``, ``false`` ->
    ``--no-name`` (the boolean flags), anything else -> ``--name=value``."""
    flags = []
    for name, value in hyperparameters.items():
        if value == "true":
            flags.append(f"--{name}")
        elif value == "false":
            flags.append(f"--no-{name}")
        else:
            flags.append(f"--{name}={value}")
    return flags


def hyperparameters_from_flags(flags: Sequence[str]) -> dict[str, str]:
    """``trainer.train`` flags -> hyperparameters, the inverse of ``train_flags``.

    ``--name=value`` and ``--name value`` become ``value``; a bare ``--name`` ``true``;
    ``--no-name`` ``false``.
    """
    hyperparameters: dict[str, str] = {}
    index = 0
    while index < len(flags):
        token = flags[index]
        if not token.startswith("--") or token == "--":
            raise ConfigError(f"expected a trainer.train flag (--name=value), got {token!r}")
        name, has_value, value = token[2:].partition("=")
        if not has_value and index + 1 < len(flags) and not flags[index + 1].startswith("--"):
            index += 1
            has_value, value = True, flags[index]
        if has_value:
            hyperparameters[name] = value
        elif name.startswith("no-"):
            hyperparameters[name[3:]] = "false"
        else:
            hyperparameters[name] = "true"
        index += 1
    return hyperparameters
