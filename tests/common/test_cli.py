import io
import logging
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import traceback

import pytest

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


def _noisy_module(tmp_path, monkeypatch, name: str, body: str) -> str:
    """A module ``name`` that writes to file descriptor 2 when imported, as a C library does."""
    (tmp_path / f"{name}.py").write_text(f"import os\nos.write(2, b'banner of {name}\\n')\n{body}")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _captures_left(tmp_path) -> list:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(cli.CAPTURE_PREFIX))


def test_a_quiet_import_hides_descriptor_2_unless_it_fails(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    ok = _noisy_module(tmp_path, monkeypatch, "pilepack_noisy_ok", "VALUE = 1\n")
    assert cli.import_quietly(ok).VALUE == 1
    assert capfd.readouterr().err == ""
    bad = _noisy_module(tmp_path, monkeypatch, "pilepack_noisy_bad",
                        "raise ImportError('libcudart.so.12: cannot open shared object file')\n")
    with pytest.raises(ImportError, match="libcudart"):
        cli.import_quietly(bad)
    assert capfd.readouterr().err == "banner of pilepack_noisy_bad\n"  # then the traceback
    assert _captures_left(tmp_path) == []
    os.write(2, b"descriptor 2 is back\n")
    assert capfd.readouterr().err == "descriptor 2 is back\n"


def test_a_process_dying_in_a_quiet_import_says_where(tmp_path):
    """A CUDA or driver abort kills the process mid-import: faulthandler names the import on
    the real stderr, and what the library wrote is kept in the capture file."""
    (tmp_path / "pilepack_aborts.py").write_text(
        "import os\nos.write(2, b'F0000 cuda_driver.cc:42] Check failed: driver too old\\n')\n"
        "os.abort()\n")
    done = subprocess.run(
        [sys.executable, "-c", "from common import cli; cli.import_quietly('pilepack_aborts')"],
        cwd=pathlib.Path(__file__).resolve().parents[2], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "TMPDIR": str(tmp_path)}, timeout=60)
    assert done.returncode == -signal.SIGABRT, done.stderr
    assert "Fatal Python error: Aborted" in done.stderr and "import_quietly" in done.stderr
    [capture] = _captures_left(tmp_path)
    assert "driver too old" in (tmp_path / capture).read_text()


def test_job_service_messages_are_hidden_below_warning_without_verbose():
    def relayed(level):  # what the portable runner's message thread logs: the root logger
        return logging.LogRecord("root", level, "/x/portable_runner.py", 1,
                                 "starting control server on port 1", None, None)

    noise = cli.HideNoise()
    assert not noise.filter(relayed(logging.INFO))
    assert noise.filter(relayed(logging.WARNING))
    ours = logging.LogRecord("pipeline.run", logging.INFO, "/x/run.py", 1, "wrote", None, None)
    assert noise.filter(ours)
