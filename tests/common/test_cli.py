import io
import logging
import sys
import traceback

from common import cli
from common.errors import DataError


def _traceback_of(err: Exception) -> str:
    try:
        raise err
    except Exception:
        return traceback.format_exc()


def test_worker_stderr_drops_only_pilepack_error_tracebacks(monkeypatch):
    """What Beam's local worker prints for a failed bundle: ``print(traceback, file=stderr)``."""
    out, log = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.StreamHandler(log)])
    monkeypatch.setenv(cli.LOCAL_WORKER_ENV, "1")
    cli.hide_worker_error_tracebacks()
    cli.hide_worker_error_tracebacks()  # idempotent: wrapped once
    # Its log: a failed bundle's record carrying a pilepack error is dropped, others stay.
    for err in (DataError("part 3 ended early"), KeyError("a bug")):
        try:
            raise err
        except Exception:
            logging.getLogger("worker").exception("bundle failed")
    assert log.getvalue().count("bundle failed") == 1 and "KeyError" in log.getvalue()
    print(_traceback_of(DataError("part 3 ended early")), file=sys.stderr)
    print("a warning", file=sys.stderr)
    bug = _traceback_of(KeyError("a bug"))
    print(bug, file=sys.stderr)
    assert out.getvalue() == "a warning\n" + bug + "\n"


def test_worker_stderr_is_left_alone_without_the_variable(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    monkeypatch.delenv(cli.LOCAL_WORKER_ENV, raising=False)
    cli.hide_worker_error_tracebacks()
    assert sys.stderr is out
