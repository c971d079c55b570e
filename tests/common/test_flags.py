"""flags.py: flags generated from config dataclasses, read back, and typos refused by name."""

from __future__ import annotations

import dataclasses

import pytest

from common.errors import ConfigError
from common.flags import (
    ArgumentParser,
    add_flags,
    check_choices,
    csv,
    flag,
    from_args,
    require,
    unknown_flags_message,
)
from pipeline.config import ReadConfig


@dataclasses.dataclass(frozen=True)
class Inner:
    chunk_bytes: int = flag(1024, help="bytes per chunk")
    subsets: tuple[str, ...] = flag((), help="comma list of subsets")


@dataclasses.dataclass(frozen=True)
class Options:
    input: str = flag(help="where to read (required)")
    seq_len: int = flag(2048, help="tokens per sequence")
    rate: float = flag(0.5, help="a fraction")
    overwrite: bool = flag(False, help="replace what is there")
    model: str | None = flag(None, help="a model file; default: train one")
    mode: str = flag("pad", choices=("pad", "drop"), help="what to do with the rest")
    inner: Inner = dataclasses.field(default_factory=Inner)

    def __post_init__(self):
        check_choices(self)


@dataclasses.dataclass(frozen=True)
class Listed:
    paths: tuple[str, ...] = flag(help="files", positional=True)
    scale: tuple[float, ...] | None = flag(None, nargs="+", help="one factor per file")
    sizes: tuple[int, ...] = flag((), nargs="+", help="sizes")


@dataclasses.dataclass(frozen=True)
class Undeclared:
    plain: int = 3


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="tool")
    add_flags(parser, Options)
    return parser


def _parse(*argv: str) -> Options:
    return from_args(Options, _parser().parse_args(list(argv)))


def _refused(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(list(argv))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_defaults_come_from_the_dataclass():
    assert _parse("--input=x") == Options(input="x")


def test_every_field_type_round_trips():
    got = _parse("--input", "x", "--seq_len=16", "--rate=0.25", "--overwrite", "--model=m.spm",
                 "--mode=drop", "--chunk_bytes=4096", "--subsets=a, b,,c")
    assert got == Options(input="x", seq_len=16, rate=0.25, overwrite=True, model="m.spm",
                          mode="drop", inner=Inner(chunk_bytes=4096, subsets=("a", "b", "c")))
    assert isinstance(got.seq_len, int) and isinstance(got.rate, float)


def test_bool_flags_have_a_negative_form():
    assert _parse("--input=x", "--overwrite", "--no-overwrite").overwrite is False


def test_required_field_is_a_required_flag(capsys):
    assert "the following arguments are required: --input" in _refused(capsys, "--seq_len=4")


@pytest.mark.parametrize("argv,fragment", [
    (("--seq_len=abc",), "invalid int value: 'abc'"),
    (("--rate=half",), "invalid float value: 'half'"),
    (("--mode=trim",), "invalid choice: 'trim'"),
])
def test_bad_values_are_refused(capsys, argv, fragment):
    assert fragment in _refused(capsys, "--input=x", *argv)


def test_choices_are_checked_when_the_dataclass_is_built_directly():
    assert Options(input="x", mode="drop").mode == "drop"
    with pytest.raises(ConfigError, match=r"^--mode must be pad or drop, got 'trim'$"):
        Options(input="x", mode="trim")


@dataclasses.dataclass(frozen=True)
class ThreeChoices:
    how: str = flag("a", choices=("a", "b", "c"), help="how")
    one: str = flag("x", choices=("x",), help="the only way")

    def __post_init__(self):
        check_choices(self)


@pytest.mark.parametrize("kwargs, message", [
    ({"how": "d"}, "--how must be a, b or c, got 'd'"),
    ({"one": "y"}, "--one must be x, got 'y'"),
])
def test_choices_message_names_flag_value_and_choices(kwargs, message):
    with pytest.raises(ConfigError) as raised:
        ThreeChoices(**kwargs)
    assert str(raised.value) == message


def test_positional_and_separate_values():
    parser = ArgumentParser(prog="tool")
    add_flags(parser, Listed)
    assert from_args(Listed, parser.parse_args(["a", "b", "--scale", "1", "0.5"])) == Listed(
        paths=("a", "b"), scale=(1.0, 0.5))
    assert from_args(Listed, parser.parse_args(["a", "--sizes", "3", "4"])) == Listed(
        paths=("a",), sizes=(3, 4))
    text = parser.format_help()
    assert "positional arguments:\n  paths" in text and "--scale SCALE [SCALE ...]" in text


def test_a_positional_is_required(capsys):
    parser = ArgumentParser(prog="tool")
    add_flags(parser, Listed)
    with pytest.raises(SystemExit):
        parser.parse_args(["--scale", "1"])
    assert "the following arguments are required: paths" in capsys.readouterr().err
    with pytest.raises(TypeError, match="positional"):
        flag((), help="files", positional=True)


def test_typo_is_refused_naming_the_closest_flag(capsys):
    err = _refused(capsys, "--input=x", "--seq_length=4")
    assert "unknown flag(s): --seq_length (did you mean --seq_len?)" in err


@pytest.mark.parametrize("abbreviation", ["--seq=4", "--over"])
def test_abbreviations_are_refused(capsys, abbreviation):
    assert "unknown flag(s): " + abbreviation.split("=")[0] in _refused(
        capsys, "--input=x", abbreviation)


def test_stray_positional_is_refused(capsys):
    assert "unexpected argument(s): extra" in _refused(capsys, "--input=x", "extra")


def test_help_shows_defaults_and_help_text():
    text = _parser().format_help()
    assert "--seq_len" in text and "tokens per sequence" in text and "2048" in text
    assert "--chunk_bytes" in text  # nested dataclasses are flattened


def test_from_args_overrides_win_and_lists_become_tuples():
    args = vars(_parser().parse_args(["--input=x", "--seq_len=16"]))
    assert from_args(Options, args, seq_len=8).seq_len == 8
    assert from_args(Options, args, inner=Inner(chunk_bytes=1)).inner == Inner(chunk_bytes=1)
    assert from_args(Inner, {"chunk_bytes": 1, "subsets": ["a"]}) == Inner(1, ("a",))


def test_skip_leaves_a_field_to_its_default():
    parser = ArgumentParser(prog="tool")
    add_flags(parser, Options, skip=("seq_len",))
    assert "--seq_len" not in parser.format_help()
    assert from_args(Options, parser.parse_args(["--input=x"])).seq_len == 2048


def test_refuse_unknown_suggests_flags_another_parser_knows(capsys):
    # The caller passes what neither parser took; also_known only feeds the suggestions.
    parser = _parser()
    parser.refuse_unknown([], also_known=["--runner"])
    with pytest.raises(SystemExit):
        parser.refuse_unknown(["--runer=DirectRunner"], also_known=["--runner"])
    assert "--runer (did you mean --runner?)" in capsys.readouterr().err


def test_unknown_flags_message():
    assert unknown_flags_message([], ["--a"]) is None
    assert unknown_flags_message(["--zzz"], ["--seq_len"]) == "unknown flag(s): --zzz; see --help"


def test_declaration_mistakes_are_type_errors():
    with pytest.raises(TypeError, match="tuple"):
        flag([], help="a mutable default")
    with pytest.raises(TypeError, match="Undeclared.plain"):
        add_flags(ArgumentParser(prog="tool"), Undeclared)


def test_csv_and_require():
    assert csv(" a, b,,c ,") == ("a", "b", "c")
    assert csv("") == ()
    require(True, "unused")
    with pytest.raises(ConfigError, match="--x must be positive"):
        require(False, "--x must be positive")


def test_a_real_config_round_trips():
    parser = ArgumentParser(prog="tool")
    add_flags(parser, ReadConfig)
    args = parser.parse_args(["--exclude_subsets=Books3,Enron Emails", "--chunk_bytes=2048"])
    assert from_args(ReadConfig, args) == ReadConfig(
        exclude_subsets=("Books3", "Enron Emails"), chunk_bytes=2048)
