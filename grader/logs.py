"""The grader's log, through the standard `logging` module: quiet unless asked.

Every module logs to its own logger (``logging.getLogger(__name__)``), under its package's
(``ROOT``: "grader", or a kit's own). A catch that turns a failure into one line, a row
or an answer logs what it caught: a bug of the grader at ERROR with its traceback, the rest
at DEBUG. Nothing reaches stderr unless
``GRADER_DEBUG`` is set: stderr may reach a learner (the page's terminal, Gradescope's
output), and a traceback could carry a submission's data or the grader's. So
``logging.lastResort`` is off, and the root logger has a handler that drops what no other
handler takes (a library's records too: Python would otherwise say on stderr that it has
no handler for them). A batch adds its staff-only ``OUT/grader.log`` for the ERROR records
(see ``kept_in``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

# The package's own name: "grader", or a kit's EXERCISE_kit, under which its modules log.
ROOT = __name__.partition(".")[0]
DEBUG_VARIABLE = "GRADER_DEBUG"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Own(logging.Handler):
    """A handler this module added, which ``setup`` replaces."""


class _Dropped(logging.NullHandler, _Own):
    """Takes every record, so that none is ever printed for want of a handler."""


class _Stderr(logging.StreamHandler, _Own):  # type: ignore[type-arg]
    """GRADER_DEBUG's handler: every record, traceback and all, to stderr."""


def debugging(environ: Mapping[str, str] = os.environ) -> bool:
    """Return True when GRADER_DEBUG asks for the log on stderr."""
    return environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def setup(environ: Mapping[str, str] = os.environ) -> None:
    """Set the grader's logging up for this command: silent, or with GRADER_DEBUG every
    record to stderr (the stderr of now: a test's capture, say)."""
    # No record without a handler is printed anywhere: the last resort writes WARNING and
    # above to stderr, and Python warns once on stderr when it is None and nothing handles.
    logging.lastResort = None
    logger = logging.getLogger(ROOT)
    for held in (logging.getLogger(), logger):
        for handler in [h for h in held.handlers if isinstance(h, _Own)]:
            held.removeHandler(handler)
    logging.getLogger().addHandler(_Dropped())
    # A thread's uncaught exception is a bug of the grader too: logged, not printed.
    threading.excepthook = thread_failed
    if debugging(environ):
        handler = _Stderr(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.setLevel(logging.NOTSET)


def thread_failed(args: threading.ExceptHookArgs) -> None:
    """Log a thread's uncaught exception as a bug of the grader (stderr may reach a learner)."""
    if args.exc_type is SystemExit:  # as Python's own hook: a thread's way to end
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger(ROOT).error(
        "a bug of the grader in %s",
        name,
        exc_info=args.exc_value,
    )


# Never through a link, where the system can say so (Windows cannot).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class _Kept(logging.FileHandler):
    """A log file of the grader's: appended to, never through a link, opened at its first
    record; a record it cannot write is lost rather than said on stderr."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o600)
        return open(fd, "a", encoding="utf-8", errors="backslashreplace")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            super().emit(record)
        except OSError:  # the file cannot be opened (a link, a full disk): the record is lost
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        """Drop it: logging's own report of the failure is a traceback on stderr."""


@contextlib.contextmanager
def kept_in(path: Path) -> Iterator[None]:
    """Append the grader's ERROR records (a bug's traceback) to ``path`` during the `with`;
    the file is made at the first one only."""
    handler = _Kept(path, mode="a", encoding="utf-8", delay=True)
    handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger(ROOT)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()


# The command asked for the set-up the moment logging was imported (cli.main, see
# grader/afterimport.py); where this module imported it, that was before setup existed.
if globals().pop("SET_UP_ONCE_LOADED", False):
    setup()
