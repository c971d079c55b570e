"""A checkpoint that cannot be written (a full disk): a typed error naming the previous
checkpoint, which stays the latest and loads."""

import os
import subprocess

import numpy as np
import pytest

from tests.trainer.test_checkpoint import make
from trainer.checkpoint import CheckpointWriteError


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def _used(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_a_full_disk_keeps_the_previous_checkpoint_loadable(small_disk):
    model, optimizer, seen, ckpt = make(str(small_disk / "run"), keep=5)
    optimizer.iterations.assign(1)
    seen.assign(8)
    first = ckpt.save(1)
    size = _used(small_disk / "run")
    weights = [w.numpy().copy() for w in model.weights]
    stat = os.statvfs(small_disk)
    (small_disk / "ballast").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - size // 3))
    for w in model.weights:  # step 2 differs from step 1
        w.assign(w + 1.0)
    optimizer.iterations.assign(2)
    with pytest.raises(CheckpointWriteError, match=f"step 2 could not be written.*previous "
                       f"checkpoint {first} is intact and loadable.*rerun"):
        ckpt.save(2)
    model2, optimizer2, seen2, ckpt2 = make(str(small_disk / "run"))
    assert ckpt2.restore_latest() == 1 and int(seen2.numpy()) == 8
    for restored, saved in zip(model2.weights, weights):
        np.testing.assert_array_equal(restored.numpy(), saved)
