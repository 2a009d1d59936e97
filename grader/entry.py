"""The `grader` command's first step.

Importing the grader's modules and building the argument parser take some tens of
milliseconds, and a KeyboardInterrupt raised there would surface as a Python traceback,
which docs/exit-codes.md counts as a failure of the grader. So the command starts here,
where nothing but the stop handling is imported yet: until `main()` takes over, a stop
signal writes its line and leaves at once (`grader.stops`).
"""

from __future__ import annotations

from grader import stops


def entry() -> None:
    """The `grader` command."""
    stops.install_early()
    from grader.cli import entry as run

    run()
