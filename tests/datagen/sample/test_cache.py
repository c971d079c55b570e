"""Tests for datagen/sample/cache.py: the sample cache and ``python -m datagen.sample.cache``."""

from __future__ import annotations

import os

import pytest

from datagen.sample import cache as sample_cache
from datagen.sample.files import load_sample

SMALL = 300_000  # total_bytes for the quick builds


def test_ensure_sample_builds_once_then_reuses(tmp_path, monkeypatch):
    sample_dir = str(tmp_path / "cache" / "sample")
    first = sample_cache.ensure_sample(sample_dir=sample_dir, total_bytes=SMALL)
    assert first.out_dir == sample_dir
    assert os.listdir(tmp_path / "cache") == ["sample"]  # the temporary build dir is gone

    def fail(**kwargs):
        raise AssertionError("ensure_sample rebuilt a finished sample")

    monkeypatch.setattr(sample_cache, "build_sample", fail)
    assert sample_cache.ensure_sample(sample_dir=sample_dir, total_bytes=SMALL) == first


def test_ensure_sample_refuses_an_unfinished_directory(tmp_path):
    (tmp_path / "sample").mkdir()
    (tmp_path / "sample" / "train-00.jsonl.zst").write_bytes(b"partial")
    with pytest.raises(FileExistsError, match="sample_info.json"):
        sample_cache.ensure_sample(sample_dir=str(tmp_path / "sample"), total_bytes=SMALL)
    assert os.listdir(tmp_path) == ["sample"]


def test_default_sample_dir_hashes_the_parameters(tmp_path):
    root = str(tmp_path)
    a = sample_cache.default_sample_dir(cache_root=root)
    assert a == sample_cache.default_sample_dir(cache_root=root)
    assert a != sample_cache.default_sample_dir(cache_root=root, total_bytes=SMALL)
    assert a != sample_cache.default_sample_dir(cache_root=root, num_train_files=3)
    assert os.path.dirname(a) == root
    assert os.path.basename(a).startswith("sample-py3.")


def test_main_writes_and_describes_the_sample(tmp_path, capsys):
    out_dir = str(tmp_path / "out")
    assert sample_cache.main([f"--out_dir={out_dir}", f"--total_bytes={SMALL}"]) == 0
    printed = capsys.readouterr().out
    assert "train-00.jsonl.zst" in printed and "val.jsonl.zst" in printed
    assert "Github" in printed
    assert load_sample(out_dir).json_bytes <= SMALL


def test_main_reports_a_bad_value_in_one_line(tmp_path, capsys):
    assert sample_cache.main([f"--out_dir={tmp_path / 'out'}", "--total_bytes=0"]) == 2
    assert capsys.readouterr().err == "error: total_bytes must be an int >= 1, got 0.\n"
    assert not (tmp_path / "out").exists()


def test_main_refuses_a_misspelt_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        sample_cache.main(["--total_byte=5"])
    assert exit_info.value.code == 2
    assert "did you mean --total_bytes?" in capsys.readouterr().err
