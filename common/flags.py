"""Command-line flags generated from frozen config dataclasses, and a parser that refuses typos.

A config field declares its flag once, with ``flag(default, help=...)``; ``add_flags`` turns
every field (nested config dataclasses included, flattened) into ``--name``, and ``from_args``
builds the dataclass back from the parsed namespace. So a default lives in one place, the
dataclass, and ``--help`` is the reference. A field's ``choices`` are declared there too: the
parser offers them, and ``check_choices``, called from the dataclass's ``__post_init__``,
refuses any other value when the dataclass is built directly (library use, tests).

    @dataclasses.dataclass(frozen=True)
    class Options:
        seq_len: int = flag(2048, help="tokens per training sequence")

    parser = ArgumentParser(prog="python -m tool")
    add_flags(parser, Options)
    options = from_args(Options, parser.parse_args(argv))
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import types
import typing
from typing import Any

from common.errors import ConfigError

_MISSING = dataclasses.MISSING


def flag(default: Any = _MISSING, *, help: str, choices: tuple | None = None,
         metavar: str | None = None, nargs: str | None = None,
         positional: bool = False) -> Any:
    """A dataclass field that is also a flag; without ``default`` the flag is required.

    Args:
      choices: the values allowed (the dataclass's ``__post_init__`` calls ``check_choices``).
      nargs: ``"+"``: a tuple field takes separate values (``--scale 1 2``), each of the
        tuple's item type, rather than one comma list.
      positional: an argument without ``--`` (a tuple field: one or more values); required,
        so it has no default.
    """
    metadata = {"help": help, "choices": choices, "metavar": metavar, "nargs": nargs,
                "positional": positional}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple (immutable) as a flag's default")
    if positional and default is not _MISSING:
        raise TypeError("a positional flag is required: give it no default")
    return dataclasses.field(default=default, metadata=metadata)


def _one_of(choices: tuple) -> str:
    """``("a", "b", "c")`` -> ``"a, b or c"``."""
    names = [str(choice) for choice in choices]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_choices(config) -> None:
    """Refuse a field of the dataclass ``config`` whose value is not one of the ``choices`` its
    ``flag`` declares: ConfigError naming the flag, the value and the values allowed. Call it
    from ``__post_init__``; the parser refuses a bad flag itself (argparse's "invalid choice")."""
    for field in dataclasses.fields(config):
        choices = field.metadata.get("choices")
        value = getattr(config, field.name)
        if choices and value not in choices:
            raise ConfigError(f"--{field.name} must be {_one_of(choices)}, got {value!r}")


def csv(value: str) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _unwrap_optional(tp) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _flag_fields(cls) -> list[tuple[dataclasses.Field, Any]]:
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.init]


def add_flags(parser: argparse.ArgumentParser, cls, *, skip: tuple[str, ...] = ()) -> None:
    """Add a ``--name`` flag per field of the dataclass ``cls`` (nested dataclasses flattened)."""
    for field, tp in _flag_fields(cls):
        if field.name in skip:
            continue
        if dataclasses.is_dataclass(tp):
            add_flags(parser, tp, skip=skip)
            continue
        if "help" not in field.metadata:
            raise TypeError(f"{cls.__name__}.{field.name} is not declared with common.flags.flag")
        positional = field.metadata.get("positional", False)
        kwargs = _argument(field, tp)
        if field.default is _MISSING:
            if not positional:  # argparse: a positional is required by being one
                kwargs["required"] = True
        else:
            kwargs["default"] = field.default
        parser.add_argument(field.name if positional else f"--{field.name}", **kwargs)


def _argument(field: dataclasses.Field, tp) -> dict[str, Any]:
    """``add_argument``'s keywords for ``field`` of type ``tp``, except its name and default."""
    kwargs: dict[str, Any] = {"help": field.metadata["help"]}
    if field.metadata.get("choices"):
        kwargs["choices"] = field.metadata["choices"]
    if field.metadata.get("metavar"):
        kwargs["metavar"] = field.metadata["metavar"]
    base, _ = _unwrap_optional(tp)
    if base is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif typing.get_origin(base) is tuple:
        nargs = field.metadata.get("nargs") or ("+" if field.metadata.get("positional") else None)
        if nargs:  # separate values, each of the tuple's item type
            kwargs["nargs"] = nargs
            kwargs["type"] = typing.get_args(base)[0]
        else:
            kwargs["type"] = csv
            kwargs["metavar"] = kwargs.get("metavar") or "A,B,..."
    else:
        kwargs["type"] = base
    return kwargs


def from_args(cls, args: argparse.Namespace | dict, **overrides):
    """Build the dataclass ``cls`` from parsed flags; ``overrides`` win over the flags."""
    values = dict(vars(args) if isinstance(args, argparse.Namespace) else args)
    values.update(overrides)
    kwargs = {}
    for field, tp in _flag_fields(cls):
        if dataclasses.is_dataclass(tp) and field.name not in overrides:
            kwargs[field.name] = from_args(tp, values)
        elif field.name in values:
            value = values[field.name]
            kwargs[field.name] = tuple(value) if isinstance(value, list) else value
    return cls(**kwargs)


def flag_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string ``parser`` knows (``--seq_len``, ``-h``, ...)."""
    return [option for action in parser._actions for option in action.option_strings]


def unknown_flags_message(unknown: list[str], known: list[str]) -> str | None:
    """``None`` when nothing is unknown; else which flags are unknown and the closest known."""
    names = [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]
    if not names and unknown:
        return f"unexpected argument(s): {' '.join(unknown)} (flags take the form --name=value)"
    if not names:
        return None
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        parts.append(f"{name}" + (f" (did you mean {close[0]}?)" if close else ""))
    return "unknown flag(s): " + ", ".join(parts) + "; see --help"


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` with no abbreviations, defaults in ``--help``, and typos named with the
    closest known flag (``--seq_length`` -> did you mean ``--seq_len``?)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(**kwargs)

    def parse_args(self, args=None, namespace=None):
        # Unknown flags first: a typo of a required flag ("--step=10") should be named as a
        # typo, not reported as the required flag missing.
        import sys

        given = sys.argv[1:] if args is None else list(args)
        known_names = flag_names(self)
        typos = [arg for arg in given if arg.startswith("--") and arg != "--"
                 and arg.split("=", 1)[0] not in known_names]
        message = unknown_flags_message(typos, known_names)
        if message:
            self.error(message)
        known, unknown = self.parse_known_args(args, namespace)
        message = unknown_flags_message(unknown, flag_names(self))
        if message:
            self.error(message)
        return known

    def refuse_unknown(self, unknown: list[str], *, also_known: list[str] = ()) -> None:
        """Exit 2 naming each unknown flag (``also_known``: flags another parser accepts)."""
        message = unknown_flags_message(unknown, flag_names(self) + list(also_known))
        if message:
            self.error(message)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each flag's default, unless it is empty (then the help says what empty means)."""

    def _get_help_string(self, action):
        text = action.help or ""
        empty = action.default is None or action.default is False or action.default in ("", ())
        if empty or action.default is argparse.SUPPRESS or "%(default)" in text:
            return text
        return text + " (default: %(default)s)"


def require(condition: bool, message: str) -> None:
    """Validate an option in ``__post_init__``: raise ConfigError(message) unless ``condition``."""
    if not condition:
        raise ConfigError(message)
