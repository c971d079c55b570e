"""trainer/config.py and the commands' flags generated from it (``common.flags``)."""

import dataclasses

import pytest

from common.flags import from_args
from trainer import evaluate, memory, train
from trainer.config import DistributionOptions, ModelOptions, TrainConfig

REQUIRED = object()
# Every flag of python -m trainer.train and its default, as the hand-written parser had them.
TRAIN_FLAGS = {
    "train_manifest": REQUIRED, "eval_manifest": None, "model_dir": REQUIRED, "preset": "tiny",
    "dropout": 0.0, "use_segments": False, "bf16": False, "recompute": False, "xla": False,
    "steps": REQUIRED, "global_batch_size": REQUIRED, "learning_rate": 6e-4,
    "min_lr_ratio": 0.1, "warmup_steps": 100, "weight_decay": 0.1, "beta_1": 0.9,
    "beta_2": 0.95, "clip_norm": 1.0, "scale_lr": False, "seed": 0, "shuffle_buffer": 10_000,
    "log_every": 10, "checkpoint_every": 500, "keep_checkpoints": 3, "eval_every": 0,
    "eval_batches": 0, "backend": "auto", "sagemaker_port": 12345, "export_dir": None,
    "profile_steps": "", "sample_system_every_ms": 500, "order": "global",
    "order_block": 0, "order_window": 0,
}
MINIMAL = ["--train_manifest=d", "--model_dir=m", "--steps=5", "--global_batch_size=8"]


def actions(parser):
    return {action.dest: action for action in parser._actions if action.dest != "help"}


@pytest.mark.parametrize("cls", [TrainConfig, ModelOptions, DistributionOptions, train.TrainPaths])
def test_every_field_is_a_train_flag_with_the_dataclass_default(cls):
    flags = actions(train.build_parser())
    for field in dataclasses.fields(cls):
        action = flags[field.name]
        if field.default is dataclasses.MISSING:
            assert action.required, field.name
        else:
            assert action.default == field.default and not action.required, field.name
        assert action.help == field.metadata["help"]


def test_train_flags_and_defaults_are_unchanged():
    flags = actions(train.build_parser())
    assert set(flags) == set(TRAIN_FLAGS)
    for name, default in TRAIN_FLAGS.items():
        if default is REQUIRED:
            assert flags[name].required, name
        else:
            assert flags[name].default == default and not flags[name].required, name


def test_flags_read_back_into_the_dataclasses():
    flags = from_args(train.TrainFlags, train.build_parser().parse_args([*MINIMAL, "--bf16"]))
    assert flags.train == TrainConfig(steps=5, global_batch_size=8)
    assert flags.model == ModelOptions(bf16=True)
    assert flags.model.gpt_config(vocab_size=32, seq_len=16).dtype_policy == "mixed_bfloat16"
    assert flags.distribution == DistributionOptions()
    assert flags.paths == train.TrainPaths(train_manifest="d", model_dir="m")


def test_evaluate_and_memory_flags_keep_their_defaults():
    flags = actions(evaluate.build_parser())
    assert (flags["model_dir"].required, flags["eval_manifest"].required) == (True, True)
    defaults = {name: flags[name].default for name in ("global_batch_size", "max_batches", "xla")}
    assert defaults == {"global_batch_size": 16, "max_batches": 0, "xla": False}
    assert flags["backend"].default == "auto"
    assert memory.build_parser().parse_args(["--presets=tiny, 125m"]).presets == ("tiny", "125m")
    assert memory.MemoryFlags().presets == ("125m", "350m", "760m", "1.3b", "2.7b", "6.7b", "13b")
    assert (memory.MemoryFlags().vocab_size, memory.MemoryFlags().seq_len) == (32768, 2048)


@pytest.mark.parametrize("command", [train, evaluate, memory])
def test_help_runs(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        command.main(["--help"])
    assert exit_.value.code == 0
    assert f"python -m trainer.{command.__name__.split('.')[-1]}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command,argv,closest",
    [
        (train, [*MINIMAL, "--learning_rat=1"], "--learning_rate"),
        (evaluate, ["--model_dir=m", "--eval_manifest=e", "--max_batch=1"], "--max_batches"),
        (memory, ["--seqlen=8"], "--seq_len"),
    ],
)
def test_a_mistyped_flag_exits_2_naming_the_closest(command, argv, closest, capsys):
    with pytest.raises(SystemExit) as exit_:
        command.main(argv)
    assert exit_.value.code == 2
    assert f"(did you mean {closest}?)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command,argv,message",
    [
        (train, [*MINIMAL, "--steps=0"], "error: --steps must be >= 1, got 0"),
        (train, [*MINIMAL, "--min_lr_ratio=2"], "error: --min_lr_ratio must be in [0, 1]"),
        (memory, ["--presets=tiny,huge"], "error: --presets: unknown ['huge']"),
    ],
)
def test_a_bad_value_is_one_error_line_and_exit_2(command, argv, message, capsys):
    assert command.main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("build, flag", [
    (lambda: ModelOptions(preset="huge"), "--preset"),
    (lambda: DistributionOptions(backend="mpi"), "--backend"),
    (lambda: TrainConfig(steps=1, global_batch_size=1, order="random"), "--order"),
])
def test_a_choice_set_in_code_is_refused_as_the_flag_would_be(build, flag):
    from common.errors import ConfigError

    with pytest.raises(ConfigError, match=flag):
        build()
