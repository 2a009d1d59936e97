"""Start a child as early as possible: its private folder, its walls, its process.

Kept free of numpy and of dataclasses (whose import pulls in `inspect`): the pipeline
starts the child first and imports the rest while the child's interpreter starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from grader.sandbox import allowed, tasks, tempdirs
from grader.sandbox.limits import Limits
from grader.sandbox.plain import CHILD_SCRIPT, spawn_unwalled, walled
from grader.sandbox.process import Popen, Process, Started, on_keeper, tables_file, widen_pipe
from grader.sandbox.staging import SUBMISSION_FILE, Kept
from grader.sandbox.walls import (
    SANDBOX_UID,
    Choice,
    Privilege,
    bwrap_command,
    child_env,
    fall_back,
    import_paths,
    privilege_plan,
    python_command,
    read_paths,
)
from grader.states import Backend
from grader.submission.source import SUBMISSION_SUFFIX

# Re-exported: where the rest of the sandbox has always found them.
__all__ = ["Process", "Started", "on_keeper", "widen_pipe"]


def parent_pid(backend: Backend) -> int:
    """Return the pid a child started now sees as its parent: this process, or bwrap's init."""
    # Inside bwrap's PID namespace the command is pid 2, a child of bwrap's own init.
    return 1 if backend is Backend.BWRAP else os.getpid()


def tasks_rule(limits: Limits, group: tasks.TaskGroup | None, backend: Backend) -> str:
    """Return how the task limit holds, as the report states it."""
    if group is not None:
        return f"{limits.tasks} (pids cgroup)"
    if backend is Backend.NONE:
        return "none"
    # RLIMIT_NPROC counts a user's processes, and does not bind the real root: neither a
    # Landlock child that stays uid 0 nor bwrap's uid 65534 when that maps to root outside.
    binding = os.geteuid() != 0 or privilege_plan(backend) is Privilege.UID
    return f"{limits.tasks} processes of its user (RLIMIT_NPROC)" + (
        "" if binding else ", not binding root"
    )


def child_config(
    *,
    tmp: str,
    limits: Limits,
    backend: Backend,
    group: tasks.TaskGroup | None,
    forked: bool = False,
    private: bool = False,
    drop: Privilege | None = None,
    user_namespace: bool | None = None,
) -> dict[str, Any]:
    """Return what the child applies to itself before it imports the submission.

    Every wall is decided here and sent as a plain yes or no: the child applies what it is
    told and knows no backend. ``private``: the child takes its own namespaces and a
    size-limited tmpfs on ``tmp`` (where bwrap does not give them already). ``drop``: how
    to leave root, where the caller knows better than the backend (a fork inside bwrap).
    ``user_namespace``: whether ``private`` namespaces need a user namespace first; by
    default, where this process lacks CAP_SYS_ADMIN (see allowed.py).
    """
    backend = Backend(backend)  # a string would make every `is` below false: no walls
    child_limits = {
        "cpu_seconds": limits.cpu_seconds,
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "file_bytes": limits.file_size_mb * 1024 * 1024,
    }
    if group is None and backend is not Backend.NONE:
        child_limits["tasks"] = limits.tasks
    write_bytes = limits.write_mb * 1024 * 1024
    # Alone in bubblewrap's namespaces: not a fork, which shares its template's.
    alone = backend is Backend.BWRAP and not forked
    plan = privilege_plan(backend) if drop is None else drop
    return {
        "backend": backend.value,  # reported back as it was, never acted on
        "limits": child_limits,
        "landlock": backend is Backend.LANDLOCK,
        "read": read_paths() if backend is Backend.LANDLOCK else [],
        "seccomp": backend is not Backend.NONE,
        "alone": alone,
        # Nothing refuses fork and setsid without a sandbox: what the submission starts
        # must die with it.
        "own_pids": backend is Backend.NONE,
        "drop_to_uid": SANDBOX_UID if plan is Privilege.UID else None,
        "drop_capabilities": plan is Privilege.CAPABILITIES,
        "write": [tmp, os.devnull],
        "forked": forked,
        "sys_path": import_paths(),
        "cgroup_fd": None if group is None else group.fd,
        "tasks_rule": tasks_rule(limits, group, backend),
        "writes_rule": (
            f"{limits.write_mb} MB in all (tmpfs)"
            if alone
            else f"{limits.file_size_mb} MB per file only"
        ),
        "private": _private(tmp, write_bytes, user_namespace) if private else None,
        "bwrap_namespaces": allowed.bwrap_namespaces(),
    }


def _private(tmp: str, size: int, user_namespace: bool | None) -> dict[str, Any]:
    """Return the child's own namespaces and tmpfs, as private_folder takes them."""
    user = allowed.namespaces_need_user() if user_namespace is None else user_namespace
    return {
        "tmp": tmp,
        "submission": os.path.join(tmp, SUBMISSION_FILE),
        "size": size,
        "user": user,
    }


def spawn_child(
    *, tmp: str, submission: str, function: str, arity: int, limits: Limits, backend: Backend
) -> Started:
    """Start a fresh interpreter for one submission, behind ``backend``."""
    # The submission's own other modules and packages, written beside it by private_folder.
    modules = [
        path
        for path in (os.path.join(tmp, name) for name in sorted(os.listdir(tmp)))
        if path != submission and (path.endswith(SUBMISSION_SUFFIX) or os.path.isdir(path))
    ]
    if not walled(backend):
        return spawn_unwalled(tmp=tmp, submission=submission, function=function, arity=arity)
    if privilege_plan(backend) is Privilege.UID:
        for path in (tmp, submission, *modules):
            _chown_tree(path)
    command = [
        *_walls_command(tmp, submission, modules, limits, backend),
        *python_command(),
        str(CHILD_SCRIPT),
    ]
    # With no sandbox too: nothing else stops a submission's fork and setsid there, and the
    # group is how whatever it started is found and killed with it.
    group = tasks.new_group(limits.tasks)
    try:
        config = child_config(
            tmp=tmp,
            limits=limits,
            backend=backend,
            group=group,
            private=backend is Backend.LANDLOCK,
        )
        config["parent"] = parent_pid(backend)
    except BaseException:  # a batch goes on to its next learner: leave nothing held
        if group is not None:
            os.close(group.fd)
            tasks.release(group.path)
        raise
    config["arity"] = arity
    read_fd, write_fd = os.pipe()
    widen_pipe(write_fd)
    tables = tables_file()  # last: nothing that could fail stands between it and _start
    if tables is not None:
        config["tables_fd"] = tables[1]  # inherited at the same number (pass_fds)
    at = time.monotonic()
    cmd = [*command, str(write_fd), submission, function, json.dumps(config)]
    try:
        proc = _start(cmd, tmp, write_fd, group, tables)
    except BaseException:
        os.close(read_fd)
        raise
    proc.group = group
    proc.signal_as_status = backend is Backend.BWRAP
    return Started(proc, read_fd, at, None if tables is None else tables[0])


def _walls_command(
    tmp: str, submission: str, modules: list[str], limits: Limits, backend: Backend
) -> list[str]:
    """Return what the interpreter's command line starts with: bwrap's, or nothing."""
    if backend is not Backend.BWRAP:
        return []
    return bwrap_command(
        tmp, submission=submission, write_bytes=limits.write_mb * 1024 * 1024, modules=modules
    )


def _start(
    cmd: list[str],
    tmp: str,
    write_fd: int,
    group: tasks.TaskGroup | None,
    tables: tuple[int, int] | None,
) -> Popen:
    """Start the child's process, in a session of its own, from the keeper thread, passing
    it its result pipe, pids cgroup and tables file; this process's copies of those close
    (and, if it could not start, the tables file's own and the group)."""
    theirs = [write_fd, *([] if group is None else [group.fd])]
    theirs += [] if tables is None else [tables[1]]
    try:
        return on_keeper(
            Popen,
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=theirs,
            # Its own session, so that the whole group can be killed at once.
            start_new_session=True,
            cwd=tmp,
            env=child_env(tmp),
        )
    except BaseException:
        if group is not None:
            tasks.release(group.path)
        if tables is not None:
            os.close(tables[0])
        raise
    finally:
        for fd in theirs:
            os.close(fd)


class Spawner(Protocol):
    """What starts a submission's children: one interpreter each (Direct), or a fork of a
    batch's template (sandbox/pool.Pool)."""

    @property
    def backend(self) -> Backend:
        """The walls the children start behind now."""
        ...

    @property
    def root(self) -> str | None:
        """Where the children's private folders go; None: a folder of their own."""
        ...

    @property
    def kept(self) -> Kept | None:
        """The folders kept for the next learner (see staging); None: none is kept."""
        ...

    def spawn(self, *, tmp: str, submission: str, function: str, arity: int) -> Started:
        """Start a child on ``submission`` (a file in ``tmp``) that calls ``function``
        with ``arity`` arguments."""
        ...

    def fall_back(self, why: str) -> str:
        """Leave bubblewrap, which could not start (saying ``why``): return the note that
        says what is used instead, or raise GraderError where nothing else may be."""
        ...


class Direct:
    """Starts each child as an interpreter of its own, behind the chosen backend."""

    root: str | None = None
    kept: Kept | None = None

    def __init__(self, choice: Choice, limits: Limits) -> None:
        self.backend: Backend = choice.backend
        self.fallback = choice.fallback
        self.limits = limits

    def spawn(self, *, tmp: str, submission: str, function: str, arity: int) -> Started:
        return spawn_child(
            tmp=tmp,
            submission=submission,
            function=function,
            arity=arity,
            limits=self.limits,
            backend=self.backend,
        )

    def fall_back(self, why: str) -> str:
        self.backend, note = fall_back(self.fallback, why, failed="the bwrap sandbox")
        self.fallback = None  # once: the second choice has no third
        return note


def private_folder(
    source: bytes,
    root: str | None,
    beside: Sequence[tuple[str, bytes]] = (),
    kept: Kept | None = None,
) -> tuple[str, Path]:
    """Make a private folder holding the submission, and the modules of the submission
    ``beside`` it (name, bytes), which it may import; return the folder and the file's path.

    A folder of its own in the temporary folder is claimed (see tempdirs); one inside a
    batch's folder is covered by the batch's claim, and may be one the batch ``kept``
    (see staging), for a submission that is a file alone.
    """
    if kept is not None and not beside:
        taken = kept.take(source)
        if taken is not None:
            return taken
    tmp = tempdirs.claim() if root is None else tempfile.mkdtemp(prefix=tempdirs.PREFIX, dir=root)
    submission = Path(tmp) / SUBMISSION_FILE
    try:
        submission.write_bytes(source)
        for name, data in beside:
            # Names the reader chose (a module's, or a package's path to one: mylib/a.py),
            # never the submission's own.
            if name != submission.name and _module_path(name):
                path = Path(tmp, *name.split("/"))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    except BaseException:
        # A full disk (or a stop) half-way: the folder goes now, not when the batch ends.
        tempdirs.remove_tree(tmp)
        raise
    return tmp, submission


def _module_path(name: str) -> bool:
    """Return True for a module's name (`utils.py`) or a path to one in packages
    (`mylib/core.py`): names Python can import, and nothing else."""
    *folders, file = name.split("/")
    stem, dot, suffix = file.rpartition(".")
    return (dot, suffix) == (".", "py") and all(p.isidentifier() for p in (*folders, stem))


def _chown_tree(path: str) -> None:
    """Give the sandbox's user a file, or a package's folder and all it holds."""
    os.chown(path, SANDBOX_UID, SANDBOX_UID)
    for here, folders, files in os.walk(path):
        for name in (*folders, *files):
            os.chown(os.path.join(here, name), SANDBOX_UID, SANDBOX_UID)


class Launch:
    """A submission's private folder and its first child, started at once."""

    def __init__(
        self,
        *,
        source: bytes,
        function: str,
        arity: int,
        spawner: Spawner,
        beside: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        self.source = source
        self.function = function
        self.arity = arity
        self.spawner = spawner
        self.beside = beside  # the submission's own modules, for every child after the first
        self.tmp, self.submission = private_folder(source, spawner.root, beside, spawner.kept)
        try:
            self.first = spawner.spawn(
                tmp=self.tmp, submission=str(self.submission), function=function, arity=arity
            )
        except BaseException:
            tempdirs.remove_tree(self.tmp)  # no Session holds it yet to remove it
            raise
        # While the child's interpreter starts: what graders that died left behind.
        tempdirs.sweep_once()
