"""The child's own modules step aside before the learner's code runs.

The child's folder leaves the import path and every module of it leaves sys.modules, found
by where each lies rather than by a list of names: the code already running keeps them, and
a learner's own `run.py` or `held.py` handed in beside the answer is the learner's.
Imports nothing but the standard library (it runs in the child, as a script's sibling).
"""

from __future__ import annotations

import os
import sys
from typing import Any

CHILD_DIR = os.path.dirname(os.path.abspath(__file__))


def _own_modules(names: list[str]) -> list[str]:
    """Return which of these modules are the child's own, found by where they lie."""
    return [name for name in names if name != "__main__" and _lies_here(name)]


def _lies_here(name: str) -> bool:
    where = getattr(sys.modules.get(name), "__file__", None)
    return (
        isinstance(where, str)
        and bool(where)
        and os.path.dirname(os.path.abspath(where)) == CHILD_DIR
    )


# Every module loaded when the template took stock (prepare), and which are its own. A fork
# then looks only at what was loaded since (the last entries of sys.modules, which keeps
# insertion order): looking at every module in each fork touched hundreds of them, a fault
# on each page the template shares with it.
_STOCK: dict[str, Any] = {"names": frozenset(), "own": []}


def prepare() -> None:
    """Take stock of the modules loaded so far (the template does, once, before any fork)."""
    _STOCK["names"] = frozenset(sys.modules)
    _STOCK["own"] = _own_modules(list(sys.modules))


def _since_stock() -> list[str]:
    """Return the names of the modules loaded since the stock was taken (all, if none was)."""
    known = _STOCK["names"]
    if not known:
        return list(sys.modules)
    new = []
    for name in reversed(sys.modules):  # newer entries lie last
        if name in known:
            break
        new.append(name)
    # A module taken out and put back since would also lie last and hide what came before
    # it: then the counts differ, and every module is looked at.
    return new if len(sys.modules) == len(known) + len(new) else list(sys.modules)


def step_aside() -> None:
    """Take the child's folder off the import path and every module of it out of
    sys.modules (whichever it imported, found by where they lie, `__main__` aside); the
    code already running keeps them, the submission finds its own names free."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != CHILD_DIR]
    for name in [*_STOCK["own"], *_own_modules(_since_stock())]:
        sys.modules.pop(name, None)
