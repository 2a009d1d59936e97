"""Allow `python -m grader`; the console script or `python -I -m grader` is the safer way.

`python -m` puts the working folder first on sys.path. Run inside a class folder, a learner's
`yaml.py` or `numpy.py` there would be imported into the grader itself and run as staff, so
the working folder leaves sys.path before anything else is imported. A learner's `grader/`
or `grader.py` there would still be found instead of this package, before this file runs:
nothing here can stop that, which is why every script the project ships runs
`python -I -m grader` or the `grader` command.
"""

import os
import sys


def _leave_working_folder() -> None:
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was removed: nothing can be imported from it
        here = None
    sys.path[:] = [
        p for p in sys.path if p not in ("", ".") and (here is None or os.path.realpath(p) != here)
    ]


_leave_working_folder()

from grader.entry import entry  # noqa: E402 - only once the working folder is off sys.path

entry()
