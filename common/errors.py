"""Typed errors a user can fix, and the one place that finds them in a wrapped exception.

Every error pilepack raises on purpose derives from ``PilepackError``: its message names the bad
value (flag, file, line) and the fix, and a command turns it into one ``error: ...`` line and
exit status 2 (``common.cli.run_main``). Anything else is a bug and keeps its traceback.

Beam re-raises a worker's exception wrapped (in-process: chained, or re-created with
``[while running ...]`` appended; across processes: as text holding the remote traceback), so
``find_error`` looks for the typed error in the chain first, then for its qualified class name
in the text.
"""

from __future__ import annotations

import re


class PilepackError(Exception):
    """An error in the input, the options or the environment that the user can fix."""

    exit_code = 2


class ConfigError(PilepackError, ValueError):
    """A flag or option with a bad value, or an unknown flag."""


class InputError(PilepackError, ValueError):
    """An input that cannot be used as a whole (no such file, nothing matched)."""


class DataError(PilepackError, ValueError):
    """Data that breaks a limit the user set (a bad record with --on_bad_record=fail, ...)."""


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def _strip_beam_suffix(message: str) -> str:
    # Beam appends " [while running 'Stage/Step']" to a re-raised exception's message.
    return re.split(r" \[while running ", message.split("\n", 1)[0], maxsplit=1)[0]


def find_error(err: BaseException | None) -> PilepackError | None:
    """The PilepackError behind ``err`` (itself, chained, or named in a remote traceback)."""
    chain = []
    seen = err
    while seen is not None and all(seen is not other for other in chain):  # chains can loop
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for link in chain:
        if isinstance(link, PilepackError):
            return type(link)(_strip_beam_suffix(str(link)))
    return error_from_text("\n".join(str(link) for link in chain))


def error_from_text(text: str) -> PilepackError | None:
    """The last ``module.ErrorClass: message`` line of a traceback text naming a PilepackError."""
    known = {f"{cls.__module__}.{cls.__qualname__}": cls
             for cls in [PilepackError, *_subclasses(PilepackError)]}
    pattern = re.compile(r"^\s*(?:\w+: )?([\w.]+): (.+)$", re.MULTILINE)
    found = None
    for match in pattern.finditer(text):
        cls = known.get(match.group(1))
        if cls is not None:
            found = cls(_strip_beam_suffix(match.group(2)))
    return found
