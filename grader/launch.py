"""The `grader` command's first step: a Ctrl-C before `main()` can catch it still ends in one line.

Importing the grader's modules and building the argument parser take some tens of
milliseconds, and a KeyboardInterrupt raised there would surface as a Python traceback,
which the README counts as a failure of the grader. So the command starts here, where
nothing is imported yet: until `main()` takes over, Ctrl-C writes the same line and the same
exit status as an interrupt anywhere else.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

# 128 + SIGINT, as cli.EXIT_INTERRUPTED (not imported: the point is to import nothing yet).
_EXIT_INTERRUPTED = 130


def _interrupted_early(signum: int, frame: FrameType | None) -> None:
    # Nothing has been written or started yet, so there is nothing to clean up: leave at once.
    os.write(2, b"grader: interrupted\n")
    os._exit(_EXIT_INTERRUPTED)


# Set by every Ctrl-C once main() has taken over, also by one whose KeyboardInterrupt Python
# swallowed: raised inside a finalizer or a weakref callback, it is only printed, and the
# command would go on as if nothing had been pressed.
_pressed = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _pressed
    _pressed = True
    raise KeyboardInterrupt


def _unraisable(hook: UnraisableHookArgs) -> None:
    # A Ctrl-C lost in a finalizer is already recorded in _pressed: no traceback for it.
    if hook.exc_type is not KeyboardInterrupt:
        sys.__unraisablehook__(hook)


def pressed() -> bool:
    """Return True once Ctrl-C was pressed, even if its KeyboardInterrupt was lost."""
    return _pressed


def hand_over() -> None:
    """Give Ctrl-C back to a KeyboardInterrupt, which `main()` now catches.

    Only the early handler is replaced: a SIGINT that was ignored when the grader started
    (a background job of a shell) stays ignored, and a caller's own handler stays.
    """
    if signal.getsignal(signal.SIGINT) is _interrupted_early:
        signal.signal(signal.SIGINT, _interrupt)
        sys.unraisablehook = _unraisable


def entry() -> None:
    """The `grader` command."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_early)
    from grader.cli import entry as run

    run()
