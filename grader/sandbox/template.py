"""The template process and the children it forks, as the pool's side sees them.

A Template is one zygote (grader/child/zygote.py) and its control socket; a ForkedProcess
is one of its forks, with Popen's interface; the Ledger files the template's messages
(answers to fork requests, children's exits) where the pool's workers wait for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from enum import Enum
from typing import IO, Any

from grader.errors import GraderError
from grader.sandbox import tasks
from grader.sandbox.spawn import on_keeper, parent_pid
from grader.sandbox.walls import CHILD_DIR, bwrap_command, child_env, import_paths, python_command
from grader.states import Backend

ZYGOTE_SCRIPT = CHILD_DIR / "zygote.py"
# Where a fork finds its result pipe, its pids cgroup and its tables' memory file: the fork
# request names them (its "targets"); the results' is the zygote's RESULT_FD too.
RESULT_FD, CGROUP_FD, TABLES_FD = 3, 4, 5
READY_SECONDS = 30.0
# A template that keeps dying is a failure of the batch itself, not of a submission.
MAX_RESTARTS = 3
# The template holds this inside bwrap's user namespace only to give each fork its own
# namespaces and tmpfs; every fork drops it before its submission is imported.
TEMPLATE_CAPABILITIES = ("CAP_SYS_ADMIN",)


class Op(Enum):
    """What a message between the parent and the template process (child/zygote.py, which
    names them as these words and imports nothing of the grader) asks or tells."""

    READY = "ready"  # the template is up
    FORK = "fork"  # fork a child, with these pipes
    KILL = "kill"  # kill this child of yours
    FORKED = "forked"  # here it is
    FORK_FAILED = "fork_failed"  # it could not be forked
    EXITED = "exited"  # a child of the template ended


class ForkedProcess:
    """A child forked by the template: Popen's interface, served over the control socket."""

    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        pid: int,
        pipes: tuple[int, int, int],
        group: tasks.TaskGroup | None,
    ) -> None:
        self.send = send  # to the template, over its control socket
        self.pid = pid
        self.group = group
        self.stdin: IO[bytes] | None = os.fdopen(pipes[0], "wb", buffering=0)
        self.stdout: IO[bytes] | None = os.fdopen(pipes[1], "rb", buffering=0)
        self.stderr: IO[bytes] | None = os.fdopen(pipes[2], "rb", buffering=0)
        self.returncode: int | None = None
        # Set when the template died under this child: the grader's failure, not the child's.
        self.lost = ""
        self.exited = threading.Event()

    def finish(self, returncode: int, lost: str = "") -> None:
        """Record how the child ended (the template reaped it, or the template is gone)."""
        self.returncode, self.lost = returncode, lost
        if self.group is not None:
            tasks.release(self.group.path)
        self.exited.set()

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the template reports this child's exit; return its return code.

        With a timeout, raise subprocess.TimeoutExpired as Popen.wait does; without one,
        give up after READY_SECONDS, as the template must report within that. A child lost
        with its template raises GraderError, so that its submission is marked, not judged.
        """
        if not self.exited.wait(READY_SECONDS if timeout is None else timeout):
            if timeout is not None:
                raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout)
            raise Unreported("the template process stopped reporting on its children")
        if self.lost:
            raise GraderError(self.lost)
        assert self.returncode is not None
        return self.returncode

    def kill_tree(self) -> None:
        """Ask the template to kill this child's process group."""
        if not self.exited.is_set():
            self.send({"op": Op.KILL.value, "pid": self.pid})


class Template:
    """One template process and its control socket: started at once, ready to fork later."""

    def __init__(self, *, root: str, backend: Backend) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        prefix = (
            bwrap_command(root, capabilities=TEMPLATE_CAPABILITIES)
            if backend is Backend.BWRAP
            else []
        )
        cmd = [
            *prefix,
            *python_command(),
            str(ZYGOTE_SCRIPT),
            str(theirs.fileno()),
            json.dumps(import_paths()),
            str(parent_pid(backend)),
        ]
        try:
            self.proc = on_keeper(
                subprocess.Popen,
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                cwd=root,
                env=child_env(root),
            )
        except BaseException:
            # A Ctrl-C or a failed start: nothing will close this Template, so its socket
            # goes now (a template already forked sees it close and leaves).
            ours.close()
            raise
        finally:
            theirs.close()
        self.control = ours

    def wait_ready(self) -> None:
        """Wait until the template has imported numpy; raise TemplateFailed if it died."""
        self.control.settimeout(READY_SECONDS)
        try:
            ready = self.control.recv(65536)
        except OSError:
            ready = b""
        self.control.settimeout(None)
        if ready != json.dumps({"op": Op.READY.value}).encode():
            self._kill()
            _, err = self.proc.communicate()
            first = (err.decode(errors="replace").strip().splitlines() or ["no message"])[0]
            self.control.close()
            raise TemplateFailed(first)

    def close(self) -> None:
        """Stop the template; its children die with it."""
        with contextlib.suppress(OSError):
            self.control.shutdown(socket.SHUT_RDWR)
        self.control.close()
        self._kill()
        self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def _kill(self) -> None:
        """Kill the template's process group, not only the process this side started.

        bubblewrap clones its sandbox's first process, which then waits on an eventfd until
        bubblewrap has written it; only after that does it set its death signal and leave
        the group (--new-session). Killed in between (a batch that ends moments after it
        starts: a bad --shard, an empty class, a stop signal), bubblewrap left that process
        waiting for ever, alone, its parent pid 1. The group is still ours to signal: its
        leader is not reaped yet.
        """
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.kill()


class Ledger:
    """What the template still owes the pool: answers to fork requests, and children's exits.

    The reader thread and the workers both use it, always under the pool's lock.
    """

    def __init__(self) -> None:
        self.pending: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self.children: dict[int, ForkedProcess] = {}
        # Exits reported before the worker that asked for the fork registered its child.
        self.early_exits: dict[int, int] = {}
        self.next_id = 0

    def expect(self) -> tuple[int, threading.Event, list[dict[str, Any]]]:
        """Open a fork request: its id, and the event and box its answer will arrive in."""
        event = threading.Event()
        box: list[dict[str, Any]] = []
        request_id, self.next_id = self.next_id, self.next_id + 1
        self.pending[request_id] = (event, box)
        return request_id, event, box

    def forget(self, request_id: int) -> None:
        """Stop waiting for an answer (the fork, if it comes, finds its pipes closed and ends)."""
        self.pending.pop(request_id, None)

    def record(self, message: dict[str, Any]) -> None:
        """File one message of the template where it belongs."""
        try:
            op = Op(message["op"])
        except ValueError:
            return  # no message the template sends
        if op in (Op.FORKED, Op.FORK_FAILED):
            event, box = self.pending.pop(message["id"], (threading.Event(), []))
            box.append(message)
            event.set()
        elif op is Op.EXITED:
            child = self.children.pop(message["pid"], None)
            if child is None:
                self.early_exits[message["pid"]] = message["returncode"]
            else:
                child.finish(message["returncode"])

    def adopt(self, proc: ForkedProcess) -> None:
        """Follow a newly forked child, or finish it at once if its exit came first."""
        if proc.pid in self.early_exits:
            proc.finish(self.early_exits.pop(proc.pid))
        else:
            self.children[proc.pid] = proc

    def fail_all(self, reason: str) -> None:
        """Fail everything a dead template will never report on."""
        for child in self.children.values():
            child.finish(-9, lost=f"{reason} while this submission was graded")
        self.children.clear()
        for event, box in self.pending.values():
            box.append({"op": Op.FORK_FAILED.value, "error": reason})
            event.set()
        self.pending.clear()


class Unreported(GraderError):
    """A child's exit was never reported, though its template lives: the batch retries the
    submission once in a fresh fork before it counts the row as lost. (Seen once, on a
    loaded machine: a kill that reached a fork before its setsid found no process group;
    the template now kills the fork by its pid too.)"""


class TemplateFailed(Exception):
    """The template process ended before it said it was ready."""
