"""How Beam workers get this package: the SDK worker image (docker/Dockerfile, not built in
CI) and ``--setup_file=./setup.py`` (built here exactly as Beam's stager builds it)."""

import os
import pathlib
import re
import tarfile

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def _locked(name: str) -> str:
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.lower().startswith(name + "=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{name} is not in requirements.lock")


def _packages() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]


def test_image_is_beams_sdk_image_at_the_locked_beam_and_python_versions():
    (base,) = re.findall(r"^FROM\s+(\S+)", DOCKERFILE, flags=re.MULTILINE)
    assert base == f"apache/beam_python3.11_sdk:{_locked('apache-beam')}"
    assert "Python 3.11" in (ROOT / "requirements.lock").read_text().splitlines()[0]
    # The runner starts Beam's boot program, the base image's entry point: never replace it.
    assert not re.search(r"^\s*(ENTRYPOINT|CMD)\b", DOCKERFILE, flags=re.MULTILINE)


def test_image_installs_every_package_at_the_lock_versions():
    for package in _packages():
        assert re.search(rf"^COPY {package} {package}$", DOCKERFILE, flags=re.MULTILINE), package
    assert "-c requirements.lock" in DOCKERFILE and "pip check" in DOCKERFILE


def test_setup_file_builds_the_package_as_beams_stager_does(tmp_path):
    from apache_beam.runners.portability.stager import Stager

    tarball = Stager._build_setup_package(str(ROOT / "setup.py"), str(tmp_path), None)
    with tarfile.open(tarball) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for package in _packages():
        modules = {str(p.relative_to(ROOT)) for p in (ROOT / package).rglob("*.py")
                   if "__pycache__" not in p.parts}
        assert modules <= names, sorted(modules - names)
    assert "schemas/manifest.schema.json" in names and "pyproject.toml" in names
    assert os.path.basename(tarball).startswith("pilepack-")
