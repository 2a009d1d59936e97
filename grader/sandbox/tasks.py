"""The task limit: a pids cgroup per child where the machine lets us make one.

RLIMIT_NPROC counts every process of a user and does not bind root; a pids cgroup counts
exactly one child's tasks (threads included) whoever runs it. The parent makes the group and
opens its ``cgroup.procs``; the child writes itself in through that descriptor (the kernel
checks who opened it), so this works inside bubblewrap's namespaces too.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import threading
from pathlib import Path
from typing import NamedTuple

# cgroup v1's pids hierarchy, then the v2 unified one where it is mounted at the usual place.
HIERARCHIES = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
BASE_NAME = "sinusoid-grader"


class TaskGroup(NamedTuple):
    """One child's pids cgroup, and its cgroup.procs opened for the child to join."""

    path: Path
    fd: int


_base_lock = threading.Lock()


def _base() -> Path | None:
    """Return our folder in a pids hierarchy we may write, or None where there is none.

    Found once, under a lock: a batch's workers ask for their first groups at the same
    moment, and two probes racing on one folder (one removing it while the other writes
    into it) made one of them answer None, which the cache then kept for the whole batch:
    every child of it fell back to RLIMIT_NPROC while `submit` had its cgroup.
    """
    with _base_lock:
        return _find_base()


@functools.cache
def _find_base() -> Path | None:
    for root in HIERARCHIES:
        try:
            if not (root / "cgroup.procs").exists():
                continue
            v2 = (root / "cgroup.controllers").exists()
            if v2 and "pids" not in (root / "cgroup.controllers").read_text().split():
                continue
            base = root / BASE_NAME
            base.mkdir(exist_ok=True)
            if v2:
                (root / "cgroup.subtree_control").write_text("+pids")
                (base / "cgroup.subtree_control").write_text("+pids")
            probe = base / f"{os.getpid()}-{threading.get_ident()}-probe"
            probe.mkdir(exist_ok=True)
            (probe / "pids.max").write_text("1")
            probe.rmdir()
        except OSError:
            continue
        _sweep(base)
        return base
    return None


def _sweep(base: Path) -> None:
    """Remove the groups that graders which have since exited left behind, and end what
    still runs in them: a process a submission started that escaped its process group
    (with no sandbox, nothing else stops fork and setsid) dies here at the latest."""
    for group in base.iterdir():
        owner = group.name.partition("-")[0]
        if group.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
            with contextlib.suppress(OSError):
                group.rmdir()


def available() -> bool:
    """Return True where each child can get a pids cgroup of its own."""
    return _base() is not None


_numbers = itertools.count()
_lock = threading.Lock()
_leftover: list[Path] = []


def new_group(tasks: int) -> TaskGroup | None:
    """Make a pids cgroup allowing ``tasks`` tasks; None where the machine has none for us."""
    base = _base()
    if base is None:
        return None
    path = base / f"{os.getpid()}-{next(_numbers)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(tasks))
        fd = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return TaskGroup(path, fd)


def release(path: Path) -> None:
    """Kill whatever is left in a child's group and remove it, now or on a later call."""
    with _lock:
        _leftover.append(path)
        for group in list(_leftover):
            try:
                # Tasks the process group kill missed (bwrap's child outliving bwrap briefly).
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                group.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # not empty yet: tried again on the next release
            _leftover.remove(group)
