"""docker/Dockerfile.train is pinned to requirements.lock (the image is not built in CI)."""

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(name):
    with open(os.path.join(REPO, name)) as handle:
        return handle.read()


def lock() -> dict:
    pins = {}
    for line in read("requirements.lock").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pins


def instructions() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", read("docker/Dockerfile.train"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_the_base_is_tensorflows_gpu_image_at_the_locked_version():
    froms = [line.split()[1] for line in instructions() if line.startswith("FROM ")]
    assert froms == [f"tensorflow/tensorflow:{lock()['tensorflow']}-gpu"]


def test_every_package_comes_at_the_locked_version():
    installs = [line for line in instructions() if "pip install" in line]
    assert installs
    pins = lock()
    for line in installs:
        words = line.split("pip install", 1)[1].split("&&")[0].split()
        assert words[:2] == ["-c", "requirements.lock"], line  # the lock constrains everything
        for requirement in words[2:]:  # the project (".", '".[train]"') or name==version
            if requirement.strip('"') in (".", ".[train]"):
                continue
            name, _, version = requirement.partition("==")
            name = re.sub(r"[-_.]+", "-", name).lower()
            assert pins.get(name) == version, f"{requirement}: the lock has {pins.get(name)}"
    assert "COPY requirements.lock" in " ".join(instructions())


def test_it_runs_as_a_sagemaker_training_container_and_as_a_plain_one():
    text = " ".join(instructions())
    assert "/usr/local/bin/train" in text and "python3 -m trainer.sagemaker.entry" in text
    assert 'CMD ["python3", "-m", "trainer.train", "--help"]' in text
    for package in ("common", "schemas", "trainer"):
        assert f"COPY {package} {package}" in text
