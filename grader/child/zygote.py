"""A template process for batch grading: imports numpy once, forks a fresh child per request.

Runs as ``python -I -S -B zygote.py CONTROL_FD PATHS PARENT``, possibly inside bubblewrap. It
never sees a case, an expected value or the reference: requests carry only a submission's path, its
confinement settings and the four pipe ends the child will use; the inputs go from the
grader to the child directly. Each forked child confines itself (limits, Landlock, seccomp)
before importing its submission, so nothing one submission does reaches another.

Control messages are JSON over a SOCK_SEQPACKET socket:
  in:  {"op": "fork", "id": N, "path": ..., "function": ..., "config": {...}} + 4 or 5 fds
       (stdin read end, stdout and stderr write ends, result write end, and the child's
       cgroup.procs where it has a task group)
       {"op": "kill", "pid": P}
  out: {"op": "forked", "id": N, "pid": P}   or   {"op": "fork_failed", "id": N, "error": E}
       and   {"op": "exited", "pid": P, "returncode": R}
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json
import os
import platform
import selectors
import signal
import site
import socket
import sys
from typing import Any

if __name__ == "__main__":
    # Started with -S, like run.py, for the same reason; the folders come as argument 2.
    sys.path.extend(json.loads(sys.argv[2]))
    site.setquit()

import numpy  # noqa: F401 - imported here once, so that every fork starts with it

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Found through the line above, inside or outside the sandbox.
import aside  # type: ignore[import-not-found]
import confine  # type: ignore[import-not-found]
import held  # type: ignore[import-not-found]  # noqa: F401 - every fork's, loaded once
import run  # type: ignore[import-not-found]

# Assembled here once rather than in every fork: building the allowlist costs about half a
# millisecond of each child's start. (Both variants: see run._confine.)
for _scoped in (False, True):
    confine.seccomp_program(platform.machine(), allow_signals=_scoped)

# What every fork starts with, taken stock of once (see aside.prepare), and set aside from the
# collector: a fork's collections would otherwise walk every object the template made, a
# write (and a copied page) on each.
aside.prepare()
gc.freeze()

# Transparent huge pages, where the kernel gives them when asked (madvise): 2 MiB on systems
# of 4 KiB pages, the only size asked for here.
HUGE_PAGE = 2 << 20
MADV_HUGEPAGE = 14


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in [
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        ]
    ]


def advise_huge_pages() -> None:
    """Ask for huge pages in the free top of the heap, where every fork's tables will lie.

    A fork's first case fills fresh memory page by page: a fault per 4 KiB (a few hundred
    for the first exercise's tables). In huge pages it is one fault per 2 MiB. glibc asks
    for them itself only where it can read the kernel's setting, in /sys, which the sandbox
    does not show; so the template asks once, for the part of its heap no object holds yet
    (what glibc keeps at the top, MALLOC_TOP_PAD_ of walls.child_env), and every fork
    inherits the advice. Nothing changes where the kernel gives no huge pages, on a system
    of other page sizes, or with another C library.
    """
    import mmap

    if mmap.PAGESIZE != 4096:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sbrk.restype = ctypes.c_void_p
        libc.sbrk.argtypes = [ctypes.c_ssize_t]
        libc.mallinfo2.restype = _MallInfo2
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        top = libc.sbrk(0)
        free_top = libc.mallinfo2().keepcost
    except (OSError, AttributeError):  # not glibc, or one older than 2.33
        return
    if not top:
        return
    start = -(-(top - free_top) // HUGE_PAGE) * HUGE_PAGE  # rounded up to a huge page
    if top - start >= HUGE_PAGE:
        libc.madvise(start, top - start, MADV_HUGEPAGE)  # advice: a refusal changes nothing


advise_huge_pages()

# Where a fork's result pipe lies (sandbox/template.py's RESULT_FD, the grader's side).
RESULT_FD = 3
# Descriptors one fork request may carry: the three standard ones, the results', the pids
# cgroup's and the tables' memory file, and room to spare.
MAX_FDS = 8


def _child(request: dict[str, Any], fds: list[int], template: int) -> None:
    """In the forked child: take the pipes, drop every other descriptor, then serve."""
    # At once, and again once the fork has changed its identity (see run._confine).
    confine.die_with_parent(template)
    request["config"]["parent"] = template
    os.setsid()
    # Where the grader wants each (its request's "targets"): 0, 1, 2, RESULT_FD, then the
    # pids cgroup's and the tables' where it gave them.
    targets = [int(t) for t in request["targets"]]
    top = max(targets) + 1
    # Moved above every target first, so that no dup2 below overwrites one still needed.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, top) for fd in fds]
    # No signal may write to the wake-up pipe's number once a target lies there.
    signal.set_wakeup_fd(-1)
    for target, fd in zip(targets, moved, strict=True):
        os.dup2(fd, target)
    # The control socket and the other children's pipes must not survive into the child.
    for fd in set(range(top)) - set(targets):
        with contextlib.suppress(OSError):
            os.close(fd)
    os.closerange(top, os.sysconf("SC_OPEN_MAX"))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(str(request["tmp"]))
    run.serve(RESULT_FD, str(request["path"]), str(request["function"]), request["config"])


def _kill(pid: int) -> None:
    """Kill a fork's process group, and the fork itself.

    By its pid too: a kill that arrives before the fork has called setsid finds no group of
    that id, and the fork would go on to import its file and wait for a request that never
    comes (its exit then went unreported until the grader gave up on it).
    """
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError):
            kill(pid, signal.SIGKILL)


def _fork(control: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """Fork a child for the grader, and say which, or why none could be forked."""
    template = os.getpid()
    try:
        if len(fds) != len(request["targets"]):
            raise OSError(
                f"the fork request carried {len(fds)} descriptors, not as many as its targets"
            )
        pid = os.fork()
    except OSError as exc:  # out of tasks or memory: the grader decides
        for fd in fds:
            os.close(fd)
        failed = {"op": "fork_failed", "id": request["id"], "error": str(exc)}
        control.send(json.dumps(failed).encode())
        return
    if pid == 0:
        try:
            _child(request, fds, template)
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
    control.send(json.dumps({"op": "forked", "id": request["id"], "pid": pid}).encode())


def _kill_request(control: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    _kill(int(request["pid"]))


# What the grader may ask, by the word it names it with (sandbox/template.py's Op).
REQUESTS = {"fork": _fork, "kill": _kill_request}


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def main() -> None:
    # The pid the grader expects as this template's parent: its own, or 1 inside bwrap.
    confine.die_with_parent(int(sys.argv[3]))
    control = socket.socket(fileno=int(sys.argv[1]))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    # A handler (not SIG_IGN) so that SIGCHLD wakes the selector and children stay waitable.
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    control.send(b'{"op": "ready"}')
    while True:
        for key, _ in sel.select():
            if key.fileobj == wake_r:  # a signal arrived: drain the wake-up pipe
                os.read(wake_r, 4096)
            else:
                message, fds, _, _ = socket.recv_fds(control, 65536, MAX_FDS)
                if not message:
                    return  # the grader closed its end: batch over
                request = json.loads(message)
                handle = REQUESTS.get(request["op"])
                if handle is not None:
                    handle(control, request, fds)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            control.send(
                json.dumps({"op": "exited", "pid": pid, "returncode": _returncode(status)}).encode()
            )


if __name__ == "__main__":
    main()
