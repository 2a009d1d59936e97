"""How Ctrl-C, SIGTERM and SIGHUP end every command.

A stop signal (Ctrl-C; SIGTERM from Kubernetes, Slurm or a container stop; SIGHUP from a
closed terminal) ends the command in one line and the shell's status for it (128 + the
signal), whenever it lands. Until `main()` takes over (see `grader.entry`), a stop signal
writes its line and leaves at once. From then on it raises `Stop`, a KeyboardInterrupt,
which every command already meets with its own tidy stop (a batch keeps what it finished).
This module imports nothing of the grader, so that the entry can load it first.

Handlers also make the grader stoppable as PID 1 of a PID namespace (a container), where
the kernel drops any signal that has none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

# Those this system has: Windows has no SIGHUP.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Stop(KeyboardInterrupt):
    """A stop signal arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_status(signum: int) -> int:
    """Return the status a shell reports for a command ended by ``signum``: 128 + its number."""
    return 128 + signum


def stopped_line(signum: int) -> str:
    """Return how the grader names the stop: "interrupted" for Ctrl-C, else the signal."""
    return "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"


def _stopped_early(signum: int, frame: FrameType | None) -> None:
    # Nothing has been written or started yet, so there is nothing to clean up: leave at once.
    os.write(2, f"grader: {stopped_line(signum)}\n".encode())
    os._exit(exit_status(signum))


# The first stop signal once main() has taken over, also one whose KeyboardInterrupt Python
# swallowed: raised inside a finalizer or a weakref callback, it is only printed, and the
# command would go on as if nothing had been sent.
_stopped_by = 0


# While set, a stop signal is recorded but raises nothing: see `writing`.
_deferred = False


def _stop(signum: int, frame: FrameType | None) -> None:
    global _stopped_by
    if _stopped_by or _deferred:
        _stopped_by = _stopped_by or signum
        # One stop at a time: a second signal (an impatient Ctrl-C, a SIGTERM after the
        # terminal's SIGHUP) must not cut short the writing of what the first one kept,
        # nor change the status it set.
        return
    _stopped_by = signum
    raise Stop(signum)


def _unraisable(hook: UnraisableHookArgs) -> None:
    # A stop lost in a finalizer is already recorded in _stopped_by: no traceback for it.
    if isinstance(hook.exc_value, KeyboardInterrupt) or hook.exc_type is None:
        return
    # Anything else is logged (grader.logs): stderr may reach a learner, a log does not.
    import logging

    logging.getLogger(__name__).error(
        "an exception Python could not raise, in %r",
        hook.object,
        exc_info=hook.exc_value,
    )


def stopped_by() -> int:
    """Return the first stop signal received since main() took over, or 0 if none was."""
    return _stopped_by


def pressed() -> bool:
    """Return True once a stop signal arrived, even if its KeyboardInterrupt was lost."""
    return _stopped_by != 0


def signal_of(exc: KeyboardInterrupt) -> int:
    """Return the signal that stopped the command: the first one received, or Ctrl-C's."""
    return _stopped_by or (exc.signum if isinstance(exc, Stop) else signal.SIGINT)


def hand_over() -> None:
    """Give every stop signal to a `Stop` exception, which `main()` now catches.

    Only the early handlers are replaced: a signal that was ignored when the grader started
    (SIGINT in a shell's background job, SIGHUP under nohup) stays ignored, and a caller's
    own handler stays.
    """
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is _stopped_early:
            signal.signal(signum, _stop)
            sys.unraisablehook = _unraisable


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """Hold stop signals back while files others read are written; they are recorded, and
    the caller asks `stopped_by()` once everything is written.

    A stop in the middle of a batch's last writes left a summary of this run beside the
    class report of the last one.
    """
    global _deferred
    previous, _deferred = _deferred, True
    try:
        yield
    finally:
        _deferred = previous


def ignore_stops() -> None:
    """Ignore further stop signals while a stop is under way.

    A second Ctrl-C, or a SIGTERM after a SIGHUP, must not cut short the writing of what
    was finished; the caller puts the handlers back once it is written.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def install_early() -> None:
    """Make a stop signal end the command at once, before anything is imported or started.

    A handler that is not the default one (a signal ignored when the grader started, a
    caller's own) stays.
    """
    for signum in STOP_SIGNALS:
        default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        if signal.getsignal(signum) is default:
            signal.signal(signum, _stopped_early)
