"""errors.py: the typed errors, and find_error through chains and remote traceback text."""

import pytest

from common.errors import ConfigError, DataError, InputError, PilepackError, find_error

# A PilepackError subclass as a worker would raise it, from a module named in the traceback.
SomeError = type("SomeError", (DataError,), {"__module__": "pipeline.x"})


def _wrapped(inner: BaseException, *, cause: bool) -> RuntimeError:
    """``inner`` behind a RuntimeError, as ``__cause__`` (raise from) or ``__context__``."""
    try:
        try:
            raise inner
        except type(inner) as err:
            if cause:
                raise RuntimeError("pipeline failed") from err
            raise RuntimeError("pipeline failed")
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize("cls", [ConfigError, InputError, DataError])
def test_typed_errors_are_value_errors_with_exit_code_2(cls):
    assert issubclass(cls, PilepackError) and issubclass(cls, ValueError)
    assert cls("x").exit_code == 2


def test_a_pilepack_error_is_found_as_itself():
    found = find_error(ConfigError("--seq_len must be >= 1, got 0"))
    assert type(found) is ConfigError and str(found) == "--seq_len must be >= 1, got 0"


@pytest.mark.parametrize("cause", [True, False], ids=["cause", "context"])
def test_found_through_chains(cause):
    inner = _wrapped(InputError("--input 'x' does not exist"), cause=cause)
    outer = _wrapped(inner, cause=not cause)  # two links, one of each kind
    found = find_error(outer)
    assert type(found) is InputError and str(found) == "--input 'x' does not exist"


def test_beam_suffix_is_dropped():
    found = find_error(_wrapped(DataError("bad record in a.jsonl line 2 [while running "
                                          "'Read/ReadFile']"), cause=True))
    assert str(found) == "bad record in a.jsonl line 2"


@pytest.mark.parametrize("line", [
    "pipeline.x.SomeError: bad record in a.jsonl line 2 [while running 'A']",
    "RuntimeError: pipeline.x.SomeError: bad record in a.jsonl line 2 [while running 'A']",
])
def test_found_in_a_remote_traceback(line):
    text = ("Traceback (most recent call last):\n"
            '  File "/worker/pipeline/x.py", line 12, in process\n'
            "    raise SomeError(...)\n" + line + "\n")
    found = find_error(RuntimeError(text))
    assert type(found) is SomeError and str(found) == "bad record in a.jsonl line 2"


def test_found_in_the_text_of_a_chained_error():
    remote = RuntimeError("common.errors.ConfigError: --chunk_bytes must be at least 1024")
    found = find_error(_wrapped(remote, cause=True))
    assert type(found) is ConfigError and str(found) == "--chunk_bytes must be at least 1024"


@pytest.mark.parametrize("err", [
    None,
    ValueError("bad"),
    _wrapped(KeyError("k"), cause=True),
    RuntimeError("Traceback ...\nbuiltins.ValueError: bad value"),
    RuntimeError("pipeline.x.NotAnError: looks like ours but is not"),
])
def test_foreign_errors_give_none(err):
    assert find_error(err) is None
