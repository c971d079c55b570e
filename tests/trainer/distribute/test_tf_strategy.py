"""The multi-worker strategy's resolver and collectives follow the worker's GPUs."""

import tensorflow as tf

from trainer.distribute import make_backend
from trainer.distribute.tf_strategy import cluster_resolver, communication_options

CLUSTER = {
    "cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
    "task": {"type": "worker", "index": 1},
}
NCCL = tf.distribute.experimental.CommunicationImplementation.NCCL
AUTO = tf.distribute.experimental.CommunicationImplementation.AUTO


def test_the_resolver_reports_the_local_gpus():
    # MultiWorkerMirroredStrategy builds one replica per num_accelerators()["GPU"]: without it
    # every worker of a GPU cluster trains on one CPU device.
    resolver = cluster_resolver(CLUSTER, num_gpus=8)
    assert resolver.num_accelerators() == {"GPU": 8}
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 1, "grpc")
    assert resolver.cluster_spec().as_dict() == CLUSTER["cluster"]


def test_a_cpu_worker_reports_no_accelerators():
    assert cluster_resolver(CLUSTER, num_gpus=0).num_accelerators() == {}


def test_gpus_all_reduce_with_nccl_and_cpus_with_tensorflows_choice():
    assert communication_options(num_gpus=8).implementation == NCCL
    assert communication_options(num_gpus=0).implementation == AUTO  # ring: the only CPU choice


def test_the_start_up_line_names_the_devices():
    # bench/gpu_check.sh fails a GPU run whose line names a CPU device
    backend = make_backend("single")
    assert backend.devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    assert backend.describe().endswith("devices=/job:localhost/replica:0/task:0/device:CPU:0")
