"""``--backend`` and the cluster environment -> a Backend. Pure functions of their arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping

from common.errors import ConfigError
from trainer.distribute import horovod, tf_strategy
from trainer.distribute.base import Backend, BackendUnavailable

BACKENDS = ("auto", "single", "mirrored", "multiworker", "horovod", "smddp")
SAGEMAKER_PORT = 12345  # --sagemaker_port: the port MultiWorkerMirroredStrategy listens on
MPI_RANK_VARIABLES = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")

# smddp stays a --backend choice so that old launch scripts get this answer, not "invalid choice".
SMDDP_REMOVED = (
    "--backend=smddp is not supported: SageMaker's smdistributed.dataparallel shipped only in "
    "SageMaker's TensorFlow training containers up to TensorFlow 2.11 and does not support "
    "Keras, and its model-parallel library is PyTorch-only, while this trainer needs "
    "TensorFlow >= 2.16 with Keras 3. Use --backend=multiworker (MultiWorkerMirroredStrategy "
    "with NCCL between GPUs; on SageMaker the cluster comes from SM_HOSTS / SM_CURRENT_HOST), "
    "or --backend=horovod (docs/distributed-training.md)"
)


def resolve_backend_name(requested: str, *, env: Mapping[str, str], num_gpus: int) -> str:
    """``auto`` -> multiworker under TF_CONFIG, horovod under horovodrun/mpirun, multiworker on
    multi-host SageMaker, mirrored with several GPUs, else single. Other names pass through.
    smddp is never chosen automatically (and cannot be built: ``SMDDP_REMOVED``)."""
    if requested not in BACKENDS:
        raise ConfigError(f"--backend={requested!r}: choose one of {', '.join(BACKENDS)}")
    if requested != "auto":
        return requested
    if "TF_CONFIG" in env:
        return "multiworker"
    # Before SM_HOSTS: SageMaker's MPI launch runs one process per GPU on hosts that also
    # carry SM_HOSTS, and those processes are Horovod ranks.
    if any(key in env for key in MPI_RANK_VARIABLES):
        return "horovod"
    if len(_sagemaker_hosts(env)) > 1:
        return "multiworker"
    return "mirrored" if num_gpus > 1 else "single"


def _sagemaker_hosts(env: Mapping[str, str]) -> list[str]:
    if "SM_HOSTS" not in env:
        return []
    try:
        hosts = json.loads(env["SM_HOSTS"])
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"SM_HOSTS is not a JSON list of host names: {env['SM_HOSTS']!r}"
        ) from err
    return list(hosts)


def tf_config_from_sagemaker(*, hosts: list[str], current_host: str, port: int) -> dict:
    """The TF_CONFIG SageMaker does not write for us: every host a worker, in SM_HOSTS order."""
    if current_host not in hosts:
        raise ConfigError(f"SM_CURRENT_HOST {current_host!r} is not in SM_HOSTS {hosts}")
    return {
        "cluster": {"worker": [f"{host}:{port}" for host in hosts]},
        "task": {"type": "worker", "index": hosts.index(current_host)},
    }


def cluster_from_env(env: Mapping[str, str], *, port: int = SAGEMAKER_PORT) -> dict | None:
    """The cluster from TF_CONFIG, else from SageMaker's SM_HOSTS/SM_CURRENT_HOST (one host
    too: ``--backend=multiworker`` then trains on that host's GPUs), else None."""
    if "TF_CONFIG" in env:
        try:
            cluster = json.loads(env["TF_CONFIG"])
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"TF_CONFIG is not valid JSON ({err}): {env['TF_CONFIG']!r}"
            ) from err
        if not isinstance(cluster, dict) or "cluster" not in cluster or "task" not in cluster:
            raise ConfigError(f"TF_CONFIG needs 'cluster' and 'task' entries, got {cluster!r}")
        return cluster
    hosts = _sagemaker_hosts(env)
    if hosts:
        return tf_config_from_sagemaker(
            hosts=hosts, current_host=env.get("SM_CURRENT_HOST", ""), port=port
        )
    return None


def make_backend(
    name: str, *, cluster: dict | None = None, num_gpus: int | None = None
) -> Backend:
    """The backend called ``name`` (resolved, not ``auto``); create it before other TF work.

    ``num_gpus``: this worker's GPUs for ``multiworker`` (None: count them).
    """
    if name == "single":
        return tf_strategy.single()
    if name == "mirrored":
        return tf_strategy.mirrored()
    if name == "multiworker":
        if cluster is None:
            raise BackendUnavailable(
                "--backend=multiworker needs the cluster: set TF_CONFIG (or, on SageMaker, "
                "SM_HOSTS and SM_CURRENT_HOST) on every worker"
            )
        return tf_strategy.multiworker(cluster=cluster, num_gpus=num_gpus)
    if name == "horovod":
        return horovod.HorovodBackend(hvd=horovod.import_horovod())
    if name == "smddp":
        raise BackendUnavailable(SMDDP_REMOVED)
    raise ConfigError(f"--backend={name!r}: choose one of {', '.join(BACKENDS)}")


def backend_from_env(
    *, requested: str, env: Mapping[str, str], num_gpus: int, port: int = SAGEMAKER_PORT
) -> Backend:
    """``--backend`` resolved against the environment and built (what every command does)."""
    name = resolve_backend_name(requested, env=env, num_gpus=num_gpus)
    return make_backend(name, cluster=cluster_from_env(env, port=port), num_gpus=num_gpus)
