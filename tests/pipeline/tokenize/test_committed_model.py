"""A committed tokenizer is reused only for the same inputs and options, and only intact."""

from __future__ import annotations

import dataclasses
import os

from pipeline.config import ReadConfig, TokenizerTrainingConfig
from pipeline.read.inputs import expand_inputs
from pipeline.tokenize import committed_model
from tokenizer.model_info import fingerprint as model_sha256
from tokenizer.spec import MODEL_FILENAME

RECORD = {"sample_bytes": 123, "seed": 0}


def _key(inputs, **training) -> str:
    return committed_model.training_fingerprint(
        read=ReadConfig(), training=TokenizerTrainingConfig(**training), inputs=inputs)


def _committed(tmp_path, key: str) -> str:
    out = tmp_path / "out"
    out.mkdir()
    model = b"model bytes"
    (out / MODEL_FILENAME).write_bytes(model)
    committed_model.commit(str(out), fingerprint=key, sha256=model_sha256(model), record=RECORD)
    return str(out)


def _input(tmp_path) -> str:
    path = tmp_path / "in.jsonl.zst"
    path.write_bytes(b"0123456789")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    return str(path)


def test_the_same_inputs_and_options_reuse_the_committed_model(tmp_path):
    key = _key(expand_inputs(_input(tmp_path)))
    out = _committed(tmp_path, key)
    assert committed_model.load(out, fingerprint=key) == RECORD


def test_a_changed_input_mtime_or_size_or_option_is_another_fingerprint(tmp_path):
    path = _input(tmp_path)
    key = _key(expand_inputs(path))
    os.utime(path, (1_700_000_001, 1_700_000_001))
    touched = _key(expand_inputs(path))
    with open(path, "ab") as handle:
        handle.write(b"more")
    grown = _key(expand_inputs(path))
    assert len({key, touched, grown, _key(expand_inputs(path), vocab_size=300)}) == 4
    out = _committed(tmp_path, key)
    assert committed_model.load(out, fingerprint=grown) is None
    read = dataclasses.replace(ReadConfig(), include_subsets=("Github",))
    assert committed_model.training_fingerprint(
        read=read, training=TokenizerTrainingConfig(), inputs=expand_inputs(path)) != grown


def test_an_input_of_unknown_version_is_never_reused(tmp_path):
    """Without an mtime or ETag a changed input could not be told: train again."""
    unknown = [dataclasses.replace(f, version="") for f in expand_inputs(_input(tmp_path))]
    assert _key(unknown) == ""
    assert committed_model.load(_committed(tmp_path, _key(unknown)), fingerprint="") is None


def test_a_changed_or_missing_model_is_not_reused(tmp_path):
    key = _key([])
    out = _committed(tmp_path, key)
    (tmp_path / "out" / MODEL_FILENAME).write_bytes(b"model bytes, half")
    assert committed_model.load(out, fingerprint=key) is None
    (tmp_path / "out" / MODEL_FILENAME).unlink()
    assert committed_model.load(out, fingerprint=key) is None


def test_without_a_commit_record_nothing_is_reused(tmp_path):
    """A model written without its record (the run died in between) is trained again."""
    (tmp_path / MODEL_FILENAME).write_bytes(b"model bytes")
    assert committed_model.load(str(tmp_path), fingerprint=_key([])) is None
    (tmp_path / committed_model.COMMITTED_NAME).write_bytes(b'{"fingerprint": ')
    assert committed_model.load(str(tmp_path), fingerprint=_key([])) is None


def test_forget_removes_the_record_and_tolerates_none(tmp_path):
    out = _committed(tmp_path, _key([]))
    committed_model.forget(out)
    committed_model.forget(out)
    assert not (tmp_path / "out" / committed_model.COMMITTED_NAME).exists()
