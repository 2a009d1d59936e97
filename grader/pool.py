"""The parent side of the template process: fork one sandboxed child per request, fast.

Starting an interpreter and importing numpy costs more than grading ten cases. For a batch,
one template process (grader/child/zygote.py) pays that once; every child is a fork of it
that confines itself (limits, Landlock, seccomp) before it imports its submission. The
template never holds a case, an expected value or the reference, so a fork cannot find one.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from typing import IO, Any

from grader.errors import GraderError
from grader.spawn import Limits, Started, child_config, widen_pipe
from grader.walls import (
    CHILD_DIR,
    FALLBACK_REQUIRED,
    SANDBOX_UID,
    Choice,
    bwrap_command,
    child_env,
    import_paths,
    landlock_usable,
    privilege_plan,
    python_command,
    second_choice,
)

ZYGOTE_SCRIPT = CHILD_DIR / "zygote.py"
READY_SECONDS = 30.0


class ForkedProcess:
    """A child forked by the template: Popen's interface, served over the control socket."""

    def __init__(self, pool: Pool, pid: int, pipes: tuple[int, int, int]) -> None:
        self.pool = pool
        self.pid = pid
        self.stdin: IO[bytes] | None = os.fdopen(pipes[0], "wb", buffering=0)
        self.stdout: IO[bytes] | None = os.fdopen(pipes[1], "rb", buffering=0)
        self.stderr: IO[bytes] | None = os.fdopen(pipes[2], "rb", buffering=0)
        self.returncode: int | None = None
        self.exited = threading.Event()

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the template reports this child's exit; return its return code.

        With a timeout, raise subprocess.TimeoutExpired as Popen.wait does; without one,
        give up after READY_SECONDS, as the template must report within that.
        """
        if not self.exited.wait(READY_SECONDS if timeout is None else timeout):
            if timeout is not None:
                raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout)
            raise GraderError("the template process stopped reporting on its children")
        assert self.returncode is not None
        return self.returncode

    def kill_tree(self) -> None:
        """Ask the template to kill this child's process group."""
        if not self.exited.is_set():
            self.pool.send({"op": "kill", "pid": self.pid})


class Pool:
    """One template process, its control socket, and the children it forked."""

    def __init__(self, *, choice: Choice, limits: Limits) -> None:
        self.limits = limits
        self.root = tempfile.mkdtemp(prefix="grader-batch-")
        # Children that run as another uid must pass through, not list, the batch folder.
        os.chmod(self.root, 0o711)
        self.lock = threading.Lock()
        self.pending: dict[int, tuple[threading.Event, list[int]]] = {}
        self.children: dict[int, ForkedProcess] = {}
        self.early_exits: dict[int, int] = {}
        self.next_id = 0
        self.dead = threading.Event()
        self.notes: list[str] = []
        self.outer = choice.backend
        try:
            self._start(choice.backend)
        except _TemplateFailed as exc:
            if choice.backend != "bwrap" or choice.fallback is None:
                raise GraderError(f"the template process could not start: {exc}") from None
            second = second_choice(require=choice.fallback == FALLBACK_REQUIRED)
            self.notes.append(f"bubblewrap could not start here ({exc}); used {second}")
            self.outer = second
            self._start(second)
        # Each fork walls itself in with Landlock where the kernel has it; inside bwrap,
        # that also keeps one submission's folder from the next one's.
        self.inner = "landlock" if landlock_usable() and self.outer != "none" else self.outer
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _start(self, backend: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        prefix = bwrap_command(self.root) if backend == "bwrap" else []
        cmd = [
            *prefix,
            *python_command(),
            str(ZYGOTE_SCRIPT),
            str(theirs.fileno()),
            json.dumps(import_paths()),
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
            cwd=self.root,
            env=child_env(self.root),
        )
        theirs.close()
        self.control = ours
        self.control.settimeout(READY_SECONDS)
        try:
            ready = self.control.recv(65536)
        except OSError:
            ready = b""
        self.control.settimeout(None)
        if ready != b'{"op": "ready"}':
            self.proc.kill()
            _, err = self.proc.communicate()
            first = (err.decode(errors="replace").strip().splitlines() or ["no message"])[0]
            self.control.close()
            raise _TemplateFailed(first)

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(message).encode()
        with self.lock:
            socket.send_fds(self.control, [data], fds or [])

    def _read(self) -> None:
        while True:
            try:
                data = self.control.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            with self.lock:
                if message["op"] == "forked":
                    event, box = self.pending.pop(message["id"])
                    box.append(message["pid"])
                    event.set()
                elif message["op"] == "exited":
                    child = self.children.pop(message["pid"], None)
                    if child is None:
                        # Exited before spawn() registered it: keep the status for spawn.
                        self.early_exits[message["pid"]] = message["returncode"]
                    else:
                        child.returncode = message["returncode"]
                        child.exited.set()
        # The template is gone: nothing will report on the children still listed.
        self.dead.set()
        with self.lock:
            for child in self.children.values():
                child.returncode = -9
                child.exited.set()
            for event, _ in self.pending.values():
                event.set()

    def spawn(
        self, *, tmp: str, submission: str, function: str, limits: Limits, backend: str
    ) -> Started:
        """Fork a child for one submission; the Session's ``spawner``."""
        del backend  # the pool decided its walls when it started
        if self.outer != "bwrap" and privilege_plan(self.inner) == "uid":
            for path in (tmp, submission):
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        result_r, result_w = os.pipe()
        widen_pipe(result_w)
        config = child_config(tmp=tmp, limits=limits, backend=self.inner, forked=True)
        if self.outer == "bwrap":
            config["drop"] = ""  # already uid 65534 with no capabilities inside bwrap
        event = threading.Event()
        box: list[int] = []
        with self.lock:
            request_id = self.next_id
            self.next_id += 1
            self.pending[request_id] = (event, box)
        theirs = [stdin_r, stdout_w, stderr_w, result_w]
        try:
            self.send(
                {
                    "op": "fork",
                    "id": request_id,
                    "tmp": tmp,
                    "path": submission,
                    "function": function,
                    "config": config,
                },
                theirs,
            )
        finally:
            for fd in theirs:
                os.close(fd)
        if not event.wait(READY_SECONDS) or not box:
            for fd in (stdin_w, stdout_r, stderr_r, result_r):
                os.close(fd)
            raise GraderError("the template process did not fork a child")
        proc = ForkedProcess(self, box[0], (stdin_w, stdout_r, stderr_r))
        with self.lock:
            if proc.pid in self.early_exits:
                proc.returncode = self.early_exits.pop(proc.pid)
                proc.exited.set()
            else:
                self.children[proc.pid] = proc
        return Started(proc, result_r, time.monotonic())

    def describe(self) -> str:
        """Return the walls around each child, e.g. 'bwrap + landlock'."""
        if self.inner == self.outer:
            return self.outer
        return f"{self.outer} + {self.inner}"

    def close(self) -> None:
        """Stop the template (it kills its children as it dies) and delete the batch folder."""
        self.control.close()
        self.proc.kill()
        self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _TemplateFailed(Exception):
    """The template process ended before it said it was ready."""
