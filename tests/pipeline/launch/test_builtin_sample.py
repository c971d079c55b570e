"""Tests for pipeline/launch/builtin_sample.py: a run without --input where datagen/ is absent."""

from __future__ import annotations

import sys

import pytest

from common import cli
from pipeline import run
from pipeline.launch import builtin_sample


@pytest.fixture
def datagen_not_installed(monkeypatch):
    """As in an installed wheel or a worker image: ``import datagen...`` fails."""
    for name in [n for n in sys.modules if n.startswith("datagen.")] + ["datagen"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delenv(cli.LOCAL_WORKER_ENV, raising=False)  # run.parse sets it; restored


@pytest.mark.parametrize("more", [[], ["--dry_run"]])
def test_a_run_without_input_says_in_one_line_to_pass_input(datagen_not_installed, tmp_path,
                                                            capsys, more):
    out = tmp_path / "sample"
    assert run.main([f"--output={out}", "--runner=DirectRunner", *more]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("error: ") and "checkout of the repository" in line
    assert "--input=" in line
    assert not out.exists()


def test_a_missing_dependency_of_datagen_is_not_hidden(monkeypatch):
    real_import = __import__

    def without_zstandard(name, *args, **kwargs):
        if name == "datagen.sample.cache":
            raise ModuleNotFoundError("No module named 'zstandard'", name="zstandard")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", without_zstandard)
    with pytest.raises(ModuleNotFoundError, match="zstandard"):
        builtin_sample.ensure_builtin_sample()
