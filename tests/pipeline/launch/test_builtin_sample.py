"""Tests for pipeline/launch/builtin_sample.py: a run without --input where datagen/ is absent,
and the sample's splits as the run and the dry run take them."""

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


class _Sample:
    train_paths = ("/s/train-00.jsonl.zst", "/s/train-01.jsonl.zst")
    val_path = "/s/val.jsonl.zst"


@pytest.fixture
def splits_run(monkeypatch):
    """``pipeline.run`` on a stand-in sample: the configs its splits would run with."""
    from pipeline.launch.dry_run import estimate

    monkeypatch.setattr(builtin_sample, "ensure_builtin_sample", _Sample)
    monkeypatch.delenv(cli.LOCAL_WORKER_ENV, raising=False)  # run.parse sets it; restored
    seen = []
    monkeypatch.setattr(run, "run_split", lambda config, beam_args: seen.append(config))
    monkeypatch.setattr(estimate, "dry_run_split",
                        lambda config, beam_args, rates_path: seen.append(config))
    return seen


def test_the_run_and_the_dry_run_take_the_same_splits(splits_run, capsys):
    assert run.main(["--output=out/s/", "--seq_len=16", "--runner=DirectRunner"]) == 0
    train, val = splits_run
    paths = [*_Sample.train_paths, _Sample.val_path]
    assert capsys.readouterr().out == f"built-in sample: {paths}\n"
    assert (train.input, train.output, train.split) == (",".join(_Sample.train_paths),
                                                        "out/s/train", "train")
    assert (val.input, val.output, val.split, val.tokenizer_model) == (
        _Sample.val_path, "out/s/val", "val", "out/s/train/tokenizer.model")
    assert train.seq_len == val.seq_len == 16
    splits_run.clear()
    assert run.main(["--dry_run", "--output=out/s", "--runner=DirectRunner"]) == 0
    assert [(c.input, c.split) for c in splits_run] == [(train.input, "train"), (val.input, "val")]


def test_a_sample_run_names_its_first_split_after_split_not_output(splits_run):
    assert run.main(["--output=out/named", "--split=first", "--runner=DirectRunner"]) == 0
    assert [(c.output, c.split) for c in splits_run] == [("out/named/train", "first"),
                                                         ("out/named/val", "val")]
