"""The one place where a command turns a PilepackError into ``error: ...`` and exit status 2."""

from __future__ import annotations

import dataclasses
import faulthandler
import importlib
import logging
import os
import sys
import tempfile
from collections.abc import Callable

from common.errors import error_from_text, find_error
from common.flags import flag


def run_main(main: Callable[[], int | None]) -> int:
    """Run a command's body; a PilepackError (or an OSError) becomes one line on stderr and
    its exit code. Any other exception is a bug and propagates with its traceback."""
    try:
        return main() or 0
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except OSError as err:
        found = find_error(err)
        print(f"error: {found or err}", file=sys.stderr)
        return 2
    except Exception as err:  # Beam wraps a worker's exception: look for ours inside
        found = find_error(err)
        if found is None:
            raise
        print(f"error: {found}", file=sys.stderr)
        return found.exit_code


class HideUserErrors(logging.Filter):
    """Drop log records that carry a PilepackError: Beam logs a failed worker's exception,
    traceback and all, before re-raising it, and ``run_main`` prints ours once, as one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            if find_error(record.exc_info[1]) is not None:
                return False
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to judge
            return True
        return error_from_text(message) is None


# Set by a command for the processes it starts: Beam's local workers, whose stderr is its own.
LOCAL_WORKER_ENV = "PILEPACK_LOCAL_WORKER"


class _HideErrorTracebacks:
    """A text stream passing everything on but the traceback of a PilepackError (and the line
    end ``print`` writes right after it)."""

    def __init__(self, stream):
        self._stream = stream
        self._dropped = False

    def write(self, text: str) -> int:
        dropped, self._dropped = self._dropped, False
        if dropped and text == "\n":
            return len(text)
        if text.startswith("Traceback") and error_from_text(text) is not None:
            self._dropped = True
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def hide_worker_error_tracebacks() -> None:
    """In a worker process of Beam's local runner, started by a command with
    ``LOCAL_WORKER_ENV`` set (it writes to the command's terminal), keep a failed bundle's
    PilepackError from reaching that terminal twice: the command reports it once, as one line.

    Beam's ``SdkHarness._execute`` (``apache_beam/runners/worker/sdk_worker.py``) reports a
    failed bundle two ways: ``_LOGGER.error(...)`` with the traceback, which the worker's log
    handlers get ``HideUserErrors`` for (as the command's own have), and before that
    ``print(traceback.format_exc(), file=sys.stderr)``, which no logger, filter or option
    reaches: the runner starts the worker (``python -m ...sdk_worker_main``, a fixed command)
    with the command's file descriptor 2. So ``sys.stderr`` -- the Python stream only, never
    the descriptor -- drops a write that is a PilepackError's traceback; everything else, any
    other error's traceback included, passes unchanged."""
    if os.environ.get(LOCAL_WORKER_ENV) != "1" or isinstance(sys.stderr, _HideErrorTracebacks):
        return
    for handler in logging.getLogger().handlers:
        handler.addFilter(HideUserErrors())
    sys.stderr = _HideErrorTracebacks(sys.stderr)


def quiet_tensorflow(*, errors_too: bool = False) -> None:
    """Keep TensorFlow's C++ log lines (INFO and WARNING; with ``errors_too`` also ERROR, such
    as "failed call to cuInit" on a machine without a GPU, for tools that only parse records)
    out of a command's output; call before TensorFlow is imported. An explicit
    TF_CPP_MIN_LOG_LEVEL wins."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3" if errors_too else "2")


@dataclasses.dataclass(frozen=True)
class CommandFlags:
    """Flags every command shares."""

    verbose: bool = flag(False, help="also show the libraries' start-up messages (Beam, "
                                     "TensorFlow) and Beam's worker logs")


# Start-up messages nobody can act on: shown with --verbose only.
NOISE = (
    "apitools not found, and bigquery client libraries are not available",
    "Missing pipeline option (runner). Executing pipeline using the default runner",
)


class HideNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # The portable runner relays the job service's messages ("starting control server
        # on port ...", "Completed job in ...") through the root logger; its warnings and
        # errors still show.
        if record.name == "root" and record.module == "portable_runner" \
                and record.levelno < logging.WARNING:
            return False
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to judge
            return True
        return not message.startswith(NOISE)


def import_tensorflow():
    """``import tensorflow`` without its C++ start-up banners (oneDNN, CUDA probing, absl's
    "before InitializeLog" notice) on the terminal. TF_CPP_MIN_LOG_LEVEL (``quiet_tensorflow``)
    quiets TensorFlow's own log, but absl writes whatever is logged before
    ``absl::InitializeLog()`` to file descriptor 2 at any level, so during the import only,
    ``import_quietly`` captures the descriptor. TF_CPP_MIN_LOG_LEVEL=0 in the environment shows
    everything."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0" or "tensorflow" in sys.modules:
        import tensorflow

        return tensorflow
    quiet_tensorflow()
    return import_quietly("tensorflow")


# What a quiet import wrote, kept if the process dies during it (see import_quietly).
CAPTURE_PREFIX = "pilepack-import-"


def import_quietly(name: str):
    """Import module ``name`` with file descriptor 2 pointed at a temporary file, which is
    deleted afterwards. If the import raises, what the file holds is written to stderr first
    (a missing CUDA library, a driver too old), then the error propagates. If the process dies
    in the import (a CUDA or driver abort), ``faulthandler`` reports it on the real descriptor
    2 and the file (``CAPTURE_PREFIX*.log`` in the temporary directory) is left behind."""
    try:
        capture = tempfile.NamedTemporaryFile(prefix=CAPTURE_PREFIX + name + "-", suffix=".log",
                                              delete=False)
    except OSError:  # no writable temporary directory: rather the banners than no import
        return importlib.import_module(name)
    sys.stderr.flush()
    saved = os.dup(2)
    handler_was_on = faulthandler.is_enabled()
    try:
        os.dup2(capture.fileno(), 2)
        if not handler_was_on:  # one already on (-X faulthandler, pytest) keeps its own file
            faulthandler.enable(file=saved)
        try:
            return importlib.import_module(name)
        except Exception:
            sys.stderr.flush()
            os.dup2(saved, 2)
            capture.seek(0)
            sys.stderr.write(capture.read().decode("utf-8", errors="replace"))
            raise
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        if not handler_was_on:
            faulthandler.disable()
        os.close(saved)
        capture.close()
        os.unlink(capture.name)


# Commands that import TensorFlow at start-up (python -m <module>).
TENSORFLOW_COMMANDS = ("trainer.train", "trainer.evaluate", "trainer.generate", "trainer.export",
                       "trainer.sagemaker.entry", "trainer.profile_report")


def quiet_tensorflow_in_commands(package: str) -> None:
    """When one of ``package``'s TensorFlow commands runs (``python -m trainer.train``), import
    TensorFlow first, quietly (``import_tensorflow``). Library imports are left alone. Call
    from the package's ``__init__``."""
    argv = getattr(sys, "orig_argv", [])
    for flag_index, arg in enumerate(argv[:-1]):
        module = argv[flag_index + 1]
        if arg == "-m" and module.startswith(package + ".") and module in TENSORFLOW_COMMANDS:
            import_tensorflow()
            return


def configure_logging(*, verbose: bool = False) -> None:
    """INFO for pilepack, WARNING for Beam and absl, and user errors kept out of the log.

    Call it before Apache Beam or TensorFlow is imported: both log at import time.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not verbose:
        for noisy in ("apache_beam", "absl"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # Beam's local job service relays its worker processes' start-up warnings.
        logging.getLogger("apache_beam.runners.portability.local_job_service").setLevel(
            logging.ERROR)
        quiet_tensorflow()
    for handler in logging.getLogger().handlers:
        handler.addFilter(HideUserErrors())
        if not verbose:
            handler.addFilter(HideNoise())
