"""pipeline/config: each bad option refused naming its flag, the split derived from --output, the
JSON round trip of the manifest's ``config``, and flags generated from every field."""

import dataclasses
import json

import pytest

from common import cli
from common.errors import ConfigError
from common.flags import from_args
from pipeline import run
from pipeline.config import GIB, PipelineConfig, QualityConfig, ReadConfig, TokenizerTrainingConfig


@pytest.mark.parametrize("cls, kwargs, message", [
    (ReadConfig, {"on_bad_record": "warn"}, "--on_bad_record must be skip or fail, got 'warn'"),
    (ReadConfig, {"max_bad_fraction": 1.5}, "--max_bad_fraction must be in [0, 1], got 1.5"),
    (ReadConfig, {"max_bad_fraction": -0.1}, "--max_bad_fraction must be in [0, 1], got -0.1"),
    (ReadConfig, {"include_subsets": ("A",), "exclude_subsets": ("B",)},
     "give --include_subsets or --exclude_subsets, not both"),
    (ReadConfig, {"max_line_bytes": 1023}, "--max_line_bytes must be at least 1024, got 1023"),
    (ReadConfig, {"max_window_bytes": 1000}, "--max_window_bytes must be at least 1024"),
    (ReadConfig, {"max_window_bytes": 2 * GIB + 1}, "--max_window_bytes is at most 2147483648"),
    (ReadConfig, {"chunk_bytes": 0}, "--chunk_bytes must be at least 1024, got 0"),
    (TokenizerTrainingConfig, {"vocab_size": 260}, "--vocab_size must be >= 261"),
    (TokenizerTrainingConfig, {"tokenizer_sample_bytes": 0},
     "--tokenizer_sample_bytes must be positive, got 0"),
    (TokenizerTrainingConfig, {"num_threads": -1}, "--num_threads must be >= 0, got -1"),
    (PipelineConfig, {"seq_len": 0}, "--seq_len must be >= 1, got 0"),
    (PipelineConfig, {"last_record": "keep"}, "--last_record must be pad or drop, got 'keep'"),
    (PipelineConfig, {"shard_bytes": 65535}, "--shard_bytes must be at least 65536, got 65535"),
    (PipelineConfig, {"encode_processes": -1}, "--encode_processes must be >= 0 (0 = auto)"),
    (PipelineConfig, {"encoder_threads": -1}, "--encoder_threads must be >= 0 (0 = auto)"),
    (PipelineConfig, {"split": "a/b"}, "--split must be letters, digits, '_', '-', '.'"),
    (PipelineConfig, {"output": "/data/my split"}, "got 'my split'"),  # derived, then checked
])
def test_each_bad_value_is_refused_naming_its_flag(cls, kwargs, message):
    with pytest.raises(ConfigError) as raised:
        cls(**kwargs)
    assert message in str(raised.value)


CHOICES = [(cls, field.name) for cls in (ReadConfig, QualityConfig, PipelineConfig)
           for field in dataclasses.fields(cls) if field.metadata.get("choices")]


@pytest.mark.parametrize("cls, name", CHOICES, ids=[name for _, name in CHOICES])
def test_every_choice_is_checked_when_a_config_is_built_directly(cls, name):
    # The flag's choices, declared once, refuse a value given in code too.
    with pytest.raises(ConfigError, match=rf"^--{name} must be .+, got 'bogus'$"):
        cls(**{name: "bogus"})


def test_limits_themselves_are_accepted():
    ReadConfig(max_bad_fraction=0.0, max_line_bytes=1024, chunk_bytes=1024)
    ReadConfig(max_bad_fraction=1.0, max_window_bytes=2 * GIB)
    TokenizerTrainingConfig(vocab_size=261, tokenizer_sample_bytes=1, num_threads=0)
    PipelineConfig(seq_len=1, shard_bytes=65536, encode_processes=0, encoder_threads=0,
                   split="a-b_c.1")


@pytest.mark.parametrize("output, split", [
    ("/data/pile/val", "val"),
    ("/data/pile/val/", "val"),
    ("s3://bucket/datasets/train", "train"),
    ("out", "out"),
    ("/", "train"),  # no name to take: the default
    ("", ""),  # no output yet: nothing derived
])
def test_split_is_derived_from_the_output_basename(output, split):
    assert PipelineConfig(output=output).split == split


def test_explicit_split_wins_over_the_output_name():
    assert PipelineConfig(output="/data/pile/val", split="heldout").split == "heldout"


def test_to_json_round_trips():
    config = PipelineConfig(
        input="a/*.zst", output="out/train", seq_len=16, segment_ids=True, last_record="drop",
        tokenizer_model="m.model", training=TokenizerTrainingConfig(vocab_size=300, seed=7),
        read=ReadConfig(exclude_subsets=("Books3", "Enron Emails"), max_bad_fraction=0.5),
    )
    doc = config.to_json()
    assert doc["read"]["exclude_subsets"] == ["Books3", "Enron Emails"]  # JSON lists
    assert doc["split"] == "train"
    assert json.loads(json.dumps(doc)) == doc
    rebuilt = PipelineConfig(**{**doc, "training": TokenizerTrainingConfig(**doc["training"]),
                                "read": ReadConfig.from_json(doc["read"]),
                                "quality": QualityConfig.from_json(doc["quality"])})
    assert rebuilt == config


def test_read_config_from_json_turns_lists_back_into_tuples():
    read = ReadConfig.from_json({"include_subsets": ["Github"], "chunk_bytes": 2048})
    assert read == ReadConfig(include_subsets=("Github",), chunk_bytes=2048)
    assert read.selects("Github") and not read.selects("Pile-CC")
    assert not ReadConfig(exclude_subsets=("Books3",)).selects("Books3")


def _leaf_fields(cls):
    """(name, default) of every flag field, nested configs flattened."""
    for field in dataclasses.fields(cls):
        if field.default_factory is not dataclasses.MISSING:
            yield from _leaf_fields(field.default_factory)
        else:
            yield field.name, field.default


def test_every_field_has_a_flag_whose_default_is_the_field_default():
    parser = run.build_parser()
    defaults = vars(parser.parse_args([]))
    fields = dict(_leaf_fields(PipelineConfig)) | dict(_leaf_fields(cli.CommandFlags))
    assert defaults == fields
    assert from_args(PipelineConfig, parser.parse_args([])) == PipelineConfig()


def test_help_lists_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.build_parser().parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name, _ in _leaf_fields(PipelineConfig):
        assert f"--{name}" in text, name
    assert "(default: 2048)" in text  # --seq_len's default, from the dataclass


def test_flags_are_read_back_into_the_config():
    args = run.build_parser().parse_args([
        "--input=x.jsonl", "--output=o/val", "--seq_len=32", "--segment_ids",
        "--include_subsets=Github, ArXiv", "--vocab_size=400", "--max_bad_fraction=0.2"])
    config = from_args(PipelineConfig, args)
    assert (config.split, config.seq_len, config.segment_ids) == ("val", 32, True)
    assert config.read.include_subsets == ("Github", "ArXiv")
    assert config.read.max_bad_fraction == 0.2 and config.training.vocab_size == 400


def test_encoder_threads_and_trainer_threads_are_separate_flags():
    args = run.build_parser().parse_args(["--encoder_threads=1", "--num_threads=3"])
    config = from_args(PipelineConfig, args)
    assert (config.encoder_threads, config.training.num_threads) == (1, 3)
    assert PipelineConfig().encoder_threads == 0  # auto


def test_encoder_flags_offer_exactly_what_the_tokenizer_library_has():
    from tokenizer.backends import ENCODER_CHOICES
    from tokenizer.guard import ON_MISMATCH

    fields = {f.name: f for f in dataclasses.fields(PipelineConfig)}
    assert set(fields["encoder"].metadata["choices"]) == set(ENCODER_CHOICES)
    assert set(fields["on_encoder_mismatch"].metadata["choices"]) == set(ON_MISMATCH)
    with pytest.raises(ValueError, match="--encoder_check_every must be >= 0"):
        PipelineConfig(encoder_check_every=-1)


@pytest.mark.parametrize("kwargs, message", [
    ({"dedup": "fuzzy"}, "--dedup must be off, exact or near, got 'fuzzy'"),
    ({"near_dup_threshold": 0.0}, "--near_dup_threshold must be in (0, 1], got 0.0"),
    ({"near_dup_threshold": 1.01}, "--near_dup_threshold must be in (0, 1], got 1.01"),
    ({"minhash_perm": 1}, "--minhash_perm must be a power of two in [2, 4096]"),
    ({"minhash_perm": 96, "minhash_bands": 8}, "power of two in [2, 4096] (one-permutation "
                                                "hashing splits each hash into that many bins), "
                                                "got 96"),
    ({"minhash_perm": 8192}, "into that many bins), got 8192"),
    ({"minhash_bands": 0}, "--minhash_bands must divide --minhash_perm (128), got 0"),
    ({"minhash_bands": 256}, "--minhash_bands must divide --minhash_perm (128), got 256"),
    ({"minhash_perm": 64, "minhash_bands": 24}, "must divide --minhash_perm (64), got 24"),
    ({"shingle_words": 0}, "--shingle_words must be in [1, 64], got 0"),
    ({"shingle_words": 65}, "--shingle_words must be in [1, 64], got 65"),
    ({"shuffle_block_records": 0}, "--shuffle_window_blocks must be >= 1, got 0 and 16"),
    ({"shuffle_window_blocks": -1}, "--shuffle_window_blocks must be >= 1, got 256 and -1"),
])
def test_each_bad_near_dup_value_is_refused_naming_its_flag(kwargs, message):
    with pytest.raises(ConfigError) as raised:
        QualityConfig(**kwargs)
    assert message in str(raised.value)


def test_near_dup_limits_themselves_are_accepted():
    QualityConfig(dedup="near", near_dup_threshold=1.0, minhash_perm=2, minhash_bands=2,
                  shingle_words=1)
    QualityConfig(near_dup_threshold=1e-6, minhash_perm=4096, minhash_bands=1, shingle_words=64)
