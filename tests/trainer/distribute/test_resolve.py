import json

import pytest

from trainer.distribute import (
    BackendUnavailable,
    cluster_from_env,
    make_backend,
    resolve_backend_name,
)
from trainer.distribute.resolve import tf_config_from_sagemaker

TF_CONFIG = json.dumps(
    {"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}}
)


@pytest.mark.parametrize(
    "env,gpus,expected",
    [
        ({}, 0, "single"),
        ({}, 1, "single"),
        ({}, 4, "mirrored"),
        ({"TF_CONFIG": TF_CONFIG}, 8, "multiworker"),
        ({"SM_HOSTS": '["algo-1", "algo-2"]', "SM_CURRENT_HOST": "algo-2"}, 1, "multiworker"),
        ({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}, 1, "single"),
        ({"OMPI_COMM_WORLD_RANK": "3"}, 1, "horovod"),
        ({"HOROVOD_RANK": "0"}, 1, "horovod"),
    ],
)
def test_auto_picks_the_backend_from_the_environment(env, gpus, expected):
    assert resolve_backend_name("auto", env=env, num_gpus=gpus) == expected


def test_named_backends_pass_through_and_unknown_ones_are_refused():
    assert resolve_backend_name("smddp", env={"TF_CONFIG": TF_CONFIG}, num_gpus=0) == "smddp"
    with pytest.raises(ValueError, match="choose one of"):
        resolve_backend_name("nccl", env={}, num_gpus=0)


def test_sagemaker_hosts_become_tf_config():
    env = {"SM_HOSTS": '["algo-1", "algo-2", "algo-3"]', "SM_CURRENT_HOST": "algo-2"}
    assert cluster_from_env(env, port=2222) == {
        "cluster": {"worker": ["algo-1:2222", "algo-2:2222", "algo-3:2222"]},
        "task": {"type": "worker", "index": 1},
    }
    with pytest.raises(ValueError, match="not in SM_HOSTS"):
        tf_config_from_sagemaker(hosts=["algo-1"], current_host="algo-9", port=1)


def test_tf_config_wins_and_bad_json_is_named():
    assert (
        cluster_from_env({"TF_CONFIG": TF_CONFIG, "SM_HOSTS": '["x", "y"]'})["task"]["index"] == 1
    )
    assert cluster_from_env({}) is None
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        cluster_from_env({"TF_CONFIG": "{worker"})
    with pytest.raises(ValueError, match="'cluster' and 'task'"):
        cluster_from_env({"TF_CONFIG": "{}"})


def test_multiworker_without_a_cluster_says_what_to_set():
    with pytest.raises(BackendUnavailable, match="set TF_CONFIG"):
        make_backend("multiworker", cluster=None)


@pytest.mark.parametrize(
    "name,fix",
    [
        ("horovod", r"HOROVOD_WITH_TENSORFLOW=1 pip install .*horovod/horovod#4302"),
        ("smddp", r"SageMaker's TensorFlow training containers .*--backend=multiworker"),
    ],
)
def test_missing_optional_libraries_name_the_fix(name, fix):
    with pytest.raises(BackendUnavailable, match=fix):
        make_backend(name)


def test_single_backend_is_the_chief_of_one():
    backend = make_backend("single")
    assert (backend.rank, backend.world_size, backend.num_replicas, backend.is_chief) == (
        0,
        1,
        1,
        True,
    )


def test_mpirun_on_sagemaker_hosts_is_horovod():
    env = {"SM_HOSTS": '["algo-1", "algo-2"]', "SM_CURRENT_HOST": "algo-1"}
    assert resolve_backend_name("auto", env={**env, "OMPI_COMM_WORLD_RANK": "5"}, num_gpus=8) == (
        "horovod"
    )


def test_one_sagemaker_host_is_a_one_worker_cluster():
    env = {"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}
    assert cluster_from_env(env, port=7) == {
        "cluster": {"worker": ["algo-1:7"]},
        "task": {"type": "worker", "index": 0},
    }


def test_smddp_is_refused_naming_the_reason_and_the_replacement():
    with pytest.raises(BackendUnavailable) as raised:
        make_backend("smddp")
    message = str(raised.value)
    assert "TensorFlow 2.11" in message and "PyTorch-only" in message
    assert "--backend=multiworker" in message and "NCCL" in message
