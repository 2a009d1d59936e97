"""The walls a batch's children actually get here, asked of one child on an empty file.

A batch's settings name the walls that held, not the backend's name alone: under one name
a fork may have a user namespace and a 64 MB tmpfs, or shared namespaces and the per-file
bound only, and `merge` must refuse shares graded under other walls. What the child says
is its own report of what it applied, before any file of a learner is read.
"""

from __future__ import annotations

import contextlib
import os
import select
import tempfile
import time
from collections.abc import Callable

from grader.errors import GraderError
from grader.sandbox import tempdirs
from grader.sandbox.frames import Event, FrameReader, ProtocolError
from grader.sandbox.process import Started
from grader.sandbox.staging import SUBMISSION_FILE

# The parts of a child's walls a batch's settings record, as results name them.
PARTS = ("tasks", "writes", "namespaces")
WAIT_SECONDS = 30.0
Start = Callable[..., Started]


def held_walls(start: Start, root: str) -> str:
    """Start one child on an empty file in a folder under ``root``, by ``start`` (which
    takes spawn's arguments); return the walls it reports, e.g. 'tasks 64 (pids cgroup);
    writes 64 MB in all (tmpfs); namespaces ipc+net+mount'."""
    tmp = tempfile.mkdtemp(prefix=tempdirs.PREFIX, dir=root)
    submission = os.path.join(tmp, SUBMISSION_FILE)
    try:
        with open(submission, "wb"):
            pass
        try:
            started = start(tmp=tmp, submission=submission, function="f", arity=0)
        except (GraderError, OSError) as exc:
            return f"unknown ({exc})"
        try:
            return _read(started.results_fd)
        finally:
            _end(started)
    finally:
        tempdirs.remove_tree(tmp)


def _read(fd: int) -> str:
    """Return the walls the first frame on ``fd`` reports, or why there are none."""
    reader = FrameReader(payload_cap=1 << 16)
    deadline = time.monotonic() + WAIT_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            return "unknown (the child ended before its walls were up)"
        try:
            frames = reader.feed(chunk)
        except ProtocolError as exc:
            return f"unknown ({exc})"
        for frame in frames:
            if frame.event is Event.CONFINED:
                header = frame.header
                return "; ".join(f"{k} {header[k]}" for k in PARTS if k in header)
            if frame.event is Event.CONFINE_ERROR:
                return f"none ({frame.header.get('message')})"
    return "unknown (no answer from the child)"


def _end(started: Started) -> None:
    proc = started.proc
    proc.kill_tree()
    with contextlib.suppress(Exception):  # killed: how it ended says nothing of the walls
        proc.wait(timeout=WAIT_SECONDS)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    os.close(started.results_fd)
    if started.tables_fd is not None:
        os.close(started.tables_fd)
