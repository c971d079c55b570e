"""Tests for datagen/sample/files.py: the Pile line format and the sample_info.json file."""

from __future__ import annotations

import json
import os

import pytest

from common.errors import InputError
from datagen.sample import build as sample_build
from datagen.sample import files as sample_files

SMALL = 300_000  # total_bytes for a quick build


def test_pile_line_matches_lm_dataformat():
    assert sample_files.pile_line(text="héllo\n", subset="Github") == (
        b'{"text": "h\\u00e9llo\\n", "meta": {"pile_set_name": "Github"}}\n'
    )


def test_train_filename():
    assert sample_files.train_filename(0) == "train-00.jsonl.zst"
    assert sample_files.train_filename(17) == "train-17.jsonl.zst"


def test_info_file_round_trips(tmp_path):
    built = sample_build.build_sample(out_dir=str(tmp_path / "out"), total_bytes=SMALL)
    assert sample_files.load_sample(built.out_dir) == built


def test_unknown_info_version_is_refused_naming_the_file(tmp_path):
    built = sample_build.build_sample(out_dir=str(tmp_path / "out"), total_bytes=SMALL)
    info_path = os.path.join(built.out_dir, sample_files.INFO_FILENAME)
    info = built.to_info()
    info["version"] = 99
    with open(info_path, "w", encoding="utf-8") as f:
        json.dump(info, f)
    with pytest.raises(InputError, match=rf"{info_path}: sample version 99 .*rebuild"):
        sample_files.load_sample(built.out_dir)
