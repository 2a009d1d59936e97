"""Named states the layers share, light enough to be imported before a child starts: the
base of every state written as a word, the mode of a grading, the sandbox's backends, a
signal's name, a report's format and a bundle's kind.

Enum and signal only: the grader starts a submission's child before it imports anything
heavier (dataclasses alone pulls in inspect, ast and dis).
"""

from __future__ import annotations

import signal
from enum import Enum


class Word(str, Enum):
    """A named state whose value is also its word in JSON, on the command line and in text.

    Compared by identity in the code (``is Mode.RUN``), never as a string; written as its
    value wherever it is formatted or serialised, on every supported Python.
    """

    def __str__(self) -> str:
        return str(self.value)


class Mode(Word):
    """What a grading is for: the visible examples (`run`) or the hidden cases (`submit`)."""

    RUN = "run"
    SUBMIT = "submit"


def signal_name(returncode: int) -> str:
    """Return e.g. 'SIGSEGV' for a process ended by a signal (a negative return code)."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class Backend(Word):
    """The walls a child runs behind."""

    BWRAP = "bwrap"  # bubblewrap: namespaces and a read-only view of the machine
    LANDLOCK = "landlock"  # Landlock and seccomp, which the child applies to itself
    NONE = "none"  # a plain child process, within its limits only


class Format(Word):
    """How a command prints its report: text for a reader, or JSON for a tool."""

    TEXT = "text"
    JSON = "json"


class Bundle(Word):
    """What `grader bundle` builds: a learner kit, or a Gradescope autograder."""

    LEARNER = "learner"
    GRADESCOPE = "gradescope"


AUTO = "auto"  # --sandbox auto: the best backend this machine has
SANDBOX_CHOICES = (AUTO, *(b.value for b in Backend))
