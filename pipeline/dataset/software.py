"""The manifest's ``software``: the versions that wrote the dataset."""

from __future__ import annotations

import importlib.metadata as md
import platform


def software_versions() -> dict:
    versions = {"python": platform.python_version()}
    for package in ("pilepack", "apache-beam", "sentencepiece", "zstandard", "fsspec", "s3fs",
                    "numpy", "google-crc32c"):
        try:
            versions[package] = md.version(package)
        except md.PackageNotFoundError:
            versions[package] = "not installed"
    return versions
