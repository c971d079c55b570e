"""For Apache Beam's ``--setup_file=./setup.py``, which builds an sdist of the package and
installs it on every worker. Everything is declared in ``pyproject.toml``; this file only lets
setuptools (and so Beam, without the ``build`` package) find it. See docs/distributed.md."""

from setuptools import setup

setup()
