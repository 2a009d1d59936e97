"""A child's process as the parent holds it: started from one long-lived thread, its
result pipe widened where the system can, its whole group killed at the end.

Kept free of numpy and of dataclasses, as spawn is: the child starts before they load.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import IO, Any, NamedTuple, ParamSpec, Protocol, TypeVar

from grader.sandbox import tasks

P = ParamSpec("P")
T = TypeVar("T")


class Process(Protocol):
    """What a Child needs of its process, whether started by Popen or forked by a template."""

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None
    returncode: int | None

    def wait(self, timeout: float | None = None) -> int: ...

    def kill_tree(self) -> None: ...


class _Keeper:
    """One thread, alive as long as the process, that starts the children of other threads.

    A child's death signal fires when the *thread* that started it ends, not the process:
    a child started from a worker or a request's thread would be killed when that thread
    finished, or, for a template, between two submissions.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._serve, name="spawner", daemon=True)
                self.thread.start()
        done = threading.Event()
        box: list[Any] = []

        def job() -> None:
            try:
                box.append((True, fn(*args, **kwargs)))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
                box.append((False, exc))
            done.set()

        self.jobs.put(job)
        done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def _serve(self) -> None:
        while True:
            self.jobs.get()()


_keeper = _Keeper()


def on_keeper(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call ``fn`` (which starts a process) on a thread that lives as long as the process."""
    if threading.current_thread() is threading.main_thread():
        return fn(*args, **kwargs)
    return _keeper.call(fn, *args, **kwargs)


def widen_pipe(fd: int) -> None:
    """Let a pipe hold 1 MiB, so a large table crosses in a few reads rather than dozens.

    Linux's alone: elsewhere a pipe keeps its size, and tables cross in more reads.
    """
    try:
        import fcntl
    except ImportError:  # Windows
        return
    grow = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux's name: macOS has none
    if grow is not None:
        with contextlib.suppress(OSError):  # refused above /proc/sys/fs/pipe-max-size: harmless
            fcntl.fcntl(fd, grow, 1 << 20)


def tables_file() -> tuple[int, int] | None:
    """Return a new, empty memory file for one child's request tables (Linux's memfd), as
    two descriptors: the parent's, to write, and the child's, opened again read-only; None
    where the system makes none. The child inherits its own empty, before its submission is
    imported; the parent fills the file once the child has said "loaded" (conversation.py).
    Read-only, and the file readable by its owner alone, the child's can neither store
    anything in it (memory past its limits), nor change it, nor move the parent's writes;
    the child maps it privately, its own copies of what it writes. Made without sealing
    allowed: nothing can seal it either."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        ours = int(create("grader-tables", os.MFD_CLOEXEC))
    except OSError:  # a seccomp or a kernel that refuses it: the pipe carries the tables
        _no_tables_file()
        return None
    try:
        # Readable by its owner alone: the child cannot open it again for writing through
        # /proc/self/fd (a memfd is made 0777), and changing modes is not in its allowlist.
        os.fchmod(ours, 0o400)
        return ours, os.open(f"/proc/self/fd/{ours}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # no /proc: no read-only way to hand it over, so the pipe
        os.close(ours)
        _no_tables_file()
        return None


def _no_tables_file() -> None:
    import logging  # here only: submit imports no logging on its way

    logging.getLogger(__name__).debug("no memory file for tables", exc_info=True)


# bwrap does not die of its command's signal: it exits with 128 + the signal's number,
# as a shell reports it. Read back as that signal, a CPU or file-size limit, or a crash in
# C code, reads the same under every backend. (A file that exits with such a status itself
# is read as that signal, as a shell would: a crash either way.)
SIGNAL_STATUS = range(129, 129 + 64)


class Popen(subprocess.Popen[bytes]):
    group: tasks.TaskGroup | None = None
    # True when bwrap stands between this process and the child (see SIGNAL_STATUS).
    signal_as_status = False

    def kill_tree(self) -> None:
        """Kill the child's whole process group (its own session, so nothing else); where
        the system has no groups or no SIGKILL (Windows), the child itself."""
        kill = getattr(signal, "SIGKILL", None)
        killpg = getattr(os, "killpg", None)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if kill is not None and killpg is not None:
                killpg(self.pid, kill)
            elif self.returncode is None:
                self.terminate()  # Windows: TerminateProcess, which no child can refuse

    def wait(self, timeout: float | None = None) -> int:
        """Wait as Popen does, then remove the child's task group."""
        code = super().wait(timeout)
        if self.signal_as_status and code in SIGNAL_STATUS:
            self.returncode = code = 128 - code
        if self.group is not None:
            group, self.group = self.group, None
            tasks.release(group.path)
        return code


class Started(NamedTuple):
    """A child process just started: the process, its result pipe, when it started, and the
    memory file its request's tables are to be written to (tables_file), if it has one."""

    proc: Process
    results_fd: int
    at: float
    tables_fd: int | None = None
