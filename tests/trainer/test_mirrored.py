"""Two replicas summing gradients train exactly like one replica with the same global batch."""

import json
import os
import subprocess
import sys

import pytest

from datagen.datasets import learnable_dataset

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirrored")
    manifest = learnable_dataset(str(root / "data"), records_per_shard=40)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.trainer.mirrored_check", manifest, str(root)],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=False,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_optimizer_does_not_sum_gradients_a_second_time(outcome):
    assert outcome["prereduced_update"] == pytest.approx(-0.5)
    assert outcome["stock_update"] == pytest.approx(-2 / 3)  # what Keras' AdamW would do


def test_two_replicas_match_one(outcome):
    single, mirrored = outcome["single"], outcome["mirrored"]
    assert (single["replicas"], mirrored["replicas"]) == (1, 2)
    assert mirrored["tokens"] == single["tokens"] == [8 * 16] * 4
    assert mirrored["local_tokens"] == single["local_tokens"]  # both replicas of this process
    assert mirrored["loss"] == pytest.approx(single["loss"], rel=1e-5)
    assert mirrored["grad_norm"] == pytest.approx(single["grad_norm"], rel=1e-4)
    assert outcome["max_weight_difference"] < 1e-4  # float sums in another order, 4 Adam steps
