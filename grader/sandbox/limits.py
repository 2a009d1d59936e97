"""Every limit on a child, its default, and the flag that sets it: written once.

The CLI's options, their help and the Limits they set are made from FLAGS, the limits check
names a flag to raise from it, and a test holds docs/sandbox.md's "Limits" table to the
same defaults. Imports nothing, so that `grader --help` stays quick.
"""

from __future__ import annotations

from typing import NamedTuple


class Limits(NamedTuple):
    """Resource limits on every child; see the "Limits" table of docs/sandbox.md."""

    case_seconds: float = 3.0
    startup_seconds: float = 10.0
    cpu_seconds: int = 60
    memory_mb: int = 1024
    file_size_mb: int = 16
    output_bytes: int = 8192
    budget_seconds: float = 10.0
    tasks: int = 64
    write_mb: int = 64


DEFAULTS = Limits()


class Flag(NamedTuple):
    """A limit a user may set: its flag, its field of Limits, its unit, its largest value."""

    flag: str
    field: str
    unit: str  # as docs/sandbox.md's table and the help say it
    most: float
    what: str

    @property
    def dest(self) -> str:
        """Return the name argparse gives the flag's value: --max-file-size, max_file_size."""
        return self.flag.lstrip("-").replace("-", "_")


HOUR, DAY = 3600, 86400
FLAGS = (
    Flag("--timeout", "case_seconds", "s", HOUR, "wall-clock limit per case"),
    Flag(
        "--budget",
        "budget_seconds",
        "s",
        DAY,
        "wall-clock limit for all the cases of one submission together; cases left when it "
        "runs out are reported as not run",
    ),
    Flag(
        "--startup-timeout",
        "startup_seconds",
        "s",
        HOUR,
        "wall-clock limit for starting and importing the submission",
    ),
    Flag("--cpu", "cpu_seconds", "s", DAY, "CPU time limit per child process"),
    Flag("--memory", "memory_mb", "MB", 1 << 20, "address-space limit per child"),
    Flag("--max-file-size", "file_size_mb", "MB", 1 << 20, "largest file it may write"),
    # Kept in the grader's memory, for each child at once.
    Flag(
        "--max-output",
        "output_bytes",
        "bytes",
        16 << 20,
        "bytes of stdout and of stderr kept; the rest is dropped",
    ),
)


def default(flag: Flag) -> float:
    """Return a flag's default, from Limits."""
    value: float = getattr(DEFAULTS, flag.field)
    return value
