"""The `grader` command's first step.

Importing the grader's modules and building the argument parser take some tens of
milliseconds, and a KeyboardInterrupt raised there would surface as a Python traceback,
which docs/exit-codes.md counts as a failure of the grader. So the command starts here,
where nothing but the stop handling is imported yet: until `main()` takes over, a stop
signal writes its line and leaves at once (`grader.stops`).
"""

from __future__ import annotations

from grader import stops

# The cyclic collector's first threshold for the command (CPython's own is 700 new objects).
# Importing numpy, yaml and the grader makes a few hundred thousand objects that all live on,
# and collecting every 700 cost a `grader submit` about 7 ms (2% of its CPU, child included).
# The grader runs no learner's code and makes few cycles; a batch's memory stays flat.
FIRST_GENERATION = 20_000


def collect_less() -> None:
    """Raise the collector's thresholds for this process (never in a learner's kernel:
    only the command calls this)."""
    import gc

    gc.set_threshold(FIRST_GENERATION, 20, 20)


def entry() -> None:
    """The `grader` command."""
    stops.install_early()
    collect_less()
    from grader.cli import entry as run

    run()
