"""The parent side of the template process: fork one sandboxed child per request, fast.

Starting an interpreter and importing numpy costs more than grading ten cases. For a batch,
one template process (grader/child/zygote.py) pays that once; every child is a fork of it
that confines itself (limits, Landlock, seccomp) before it imports its submission. The
template never holds a case, an expected value or the reference, so a fork cannot find one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from typing import Any

from grader.errors import GraderError
from grader.sandbox import tasks, tempdirs
from grader.sandbox.allowed import describe_bwrap
from grader.sandbox.limits import Limits
from grader.sandbox.probe import held_walls
from grader.sandbox.process import Process, tables_file
from grader.sandbox.spawn import (
    Started,
    child_config,
    spawn_child,
    widen_pipe,
)
from grader.sandbox.staging import Kept
from grader.sandbox.template import (
    CGROUP_FD,
    MAX_RESTARTS,
    READY_SECONDS,
    RESULT_FD,
    TABLES_FD,
    ForkedProcess,
    Ledger,
    Op,
    Template,
    TemplateFailed,
)
from grader.sandbox.walls import (
    SANDBOX_UID,
    Choice,
    Privilege,
    fall_back,
    landlock_usable,
    privilege_plan,
)
from grader.states import Backend

STOPPING = "the batch is stopping: no more children are started"
# How long a stop waits for a walls probe under way (see stop).
WALLS_GRACE = 2.0


class Pool:
    """A template process, restarted when it dies, and the children it forked: a Spawner.

    Making a Pool starts the template's process and returns at once, so that the caller
    imports and loads what it needs while the template imports numpy; the first fork (or
    ``wait_ready``) waits for it. Whoever makes it closes it, with `with`; a batch that
    is told to stop only ``stop``s it.
    """

    def __init__(self, *, choice: Choice, limits: Limits) -> None:
        self.limits = limits
        self.lock = threading.Lock()
        self.ledger = Ledger()
        self.notes: list[str] = []
        self.restarts = 0
        # Why the batch cannot go on, once the template cannot be brought back.
        self.broken = ""
        self.template_dead = False
        # Set by stop(): from then on nothing is forked or restarted (a Ctrl-C's stop
        # comes while workers may still be asking for forks).
        self.closed = False
        self.choice = choice
        self.outer = choice.backend
        self.inner = choice.backend
        # Each learner in a bubblewrap of their own, not a fork of the template (see apart).
        self.separate = False
        self.children: set[Process] = set()
        self.held: str | None = None  # the walls a child reported (see walls)
        self.walls_lock = threading.Lock()
        self.asking: threading.Thread | None = None  # see ask_walls
        self.kept = Kept()  # the children's folders, kept for the next learner (see staging)
        self.ready = False
        self.ready_lock = threading.Lock()
        self.root = tempdirs.claim("grader-batch-")
        try:
            # Children that run as another uid must pass through, not list, the batch folder.
            os.chmod(self.root, 0o711)
            self.template = Template(root=self.root, backend=choice.backend)
            # While the template imports numpy: what graders that died left behind.
            tempdirs.sweep_once()
        except BaseException:
            # A Ctrl-C while the template starts (a few tens of milliseconds under bwrap):
            # no `with` holds this Pool yet to close it, so its folder goes here.
            tempdirs.remove_tree(self.root)
            raise

    def wait_ready(self) -> None:
        """Wait for the first template, falling back from bubblewrap as the choice allows."""
        with self.ready_lock:
            if self.ready:
                return
            try:
                self.template.wait_ready()
            except TemplateFailed as exc:
                if self.closed:  # closed while it started: not bubblewrap's failure
                    raise GraderError(STOPPING) from None
                self._fall_back(str(exc))
            # Each fork walls itself in with Landlock where the kernel has it; inside bwrap,
            # that also keeps one submission's folder from the next one's.
            walled = landlock_usable() and self.outer is not Backend.NONE
            self.inner = Backend.LANDLOCK if walled else self.outer
            if self.outer is Backend.BWRAP and not walled:
                self._apart()
            else:
                self._listen()
            self.ready = True

    def _apart(self) -> None:
        """Give each learner a bubblewrap of their own: the template's forks would share it.

        Forks of one bubblewrap share its uid (the batch folder's owner), its PID namespace
        and its view of the batch folder: only Landlock, which each fork applies to itself,
        keeps one learner out of another's folder and /proc. Where the container refuses
        Landlock, nothing else holds per fork, so the template goes and each learner is
        started alone in bubblewrap's namespaces, as `grader submit` starts one.
        """
        self.separate = True
        self.template_dead = True
        self.template.close()

    def _fall_back(self, why: str) -> None:
        """Start the template again under the second choice, where bwrap may be given up."""
        second, note = fall_back(self.choice.fallback, why, failed="the template process")
        self.notes.append(note)
        self.outer = second
        self.template = Template(root=self.root, backend=second)
        try:
            self.template.wait_ready()
        except TemplateFailed as again:
            raise GraderError(f"the template process could not start: {again}") from None

    def _listen(self) -> None:
        template = self.template
        threading.Thread(target=self._read, args=(template,), daemon=True).start()

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(message).encode()
        with self.lock, contextlib.suppress(OSError):  # a dead template: its reader says so
            socket.send_fds(self.template.control, [data], fds or [])

    def _read(self, template: Template) -> None:
        while True:
            try:
                data = template.control.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            with self.lock:
                self.ledger.record(message)
        with self.lock:
            if template is self.template:  # the current template's socket closed: it died
                self._orphan(template)

    def _orphan(self, template: Template) -> None:
        """Fail what a dead template will never report on; called with the lock held."""
        code = template.proc.poll()
        reason = "the template process died" + (f" (exit status {code})" if code else "")
        self.ledger.fail_all(reason)
        self.template_dead = True

    def _alive(self) -> Template:
        """Return a running template, restarting a dead one (a few times at most)."""
        with self.lock:
            template, dead = self.template, self.template_dead
        if not dead and template.proc.poll() is None:
            return template
        with self.lock:
            if self.closed:
                raise GraderError(STOPPING)
            if self.broken:
                raise GraderError(self.broken)
            if self.template is template:  # no other thread restarted it meanwhile
                self._restart(template)
            return self.template

    def _restart(self, dead: Template) -> None:
        """Replace a dead template; called with the lock held."""
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            self.broken = f"the template process died {self.restarts} times"
            raise GraderError(self.broken)
        # Its children are gone too, whether or not its reader has noticed yet.
        self._orphan(dead)
        dead.close()
        try:
            self.template = Template(root=self.root, backend=self.outer)
            self.template.wait_ready()
        except TemplateFailed as exc:
            self.broken = f"the template process could not be restarted: {exc}"
            raise GraderError(self.broken) from None
        self.template_dead = False
        self.notes.append("the template process died and was restarted")
        self._listen()

    def _config(self, tmp: str, limits: Limits, group: tasks.TaskGroup | None) -> dict[str, Any]:
        config = child_config(
            tmp=tmp,
            limits=limits,
            backend=self.inner,
            group=group,
            forked=True,
            private=self.outer is not Backend.NONE,
            # Inside bwrap: uid 65534 already, with only the template's capability to drop.
            drop=Privilege.CAPABILITIES if self.outer is Backend.BWRAP else None,
            # Inside bwrap the template holds CAP_SYS_ADMIN in a user namespace already.
            user_namespace=False if self.outer is Backend.BWRAP else None,
        )
        if group is not None:
            config["cgroup_fd"] = CGROUP_FD  # where the template puts it
        return config

    def _fork(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Ask the template for a fork; return its answer ("forked" or "fork_failed")."""
        with self.lock:
            request["id"], event, box = self.ledger.expect()
        self.send(request, fds)
        if not event.wait(READY_SECONDS) or not box:
            with self.lock:
                self.ledger.forget(request["id"])
            return {"op": Op.FORK_FAILED.value, "error": "no answer from the template process"}
        return box[0]

    @property
    def backend(self) -> Backend:
        """The walls around the template, and so around every fork (Landlock aside)."""
        self.wait_ready()
        return self.outer

    def spawn(self, *, tmp: str, submission: str, function: str, arity: int) -> Started:
        """Fork a child for one submission in ``tmp``, a folder under ``root``."""
        self.wait_ready()
        return self._start(tmp=tmp, submission=submission, function=function, arity=arity)

    def ask_walls(self) -> None:
        """Ask for the walls (see walls) in a thread of their own, beside what comes next;
        a stop lets that child answer first (see stop)."""
        self.asking = threading.Thread(target=self.walls, name="walls", daemon=True)
        self.asking.start()

    def walls(self) -> str:
        """Return the walls a child gets here, as one child reported them (see probe.py);
        asked once, whichever thread asks first (a batch asks beside its first learners)."""
        self.wait_ready()
        with self.walls_lock:
            if self.held is None:
                self.held = held_walls(self._start, self.root)
            return self.held

    def _start(self, *, tmp: str, submission: str, function: str, arity: int) -> Started:
        limits = self.limits
        if self.separate:
            return self._spawn_alone(tmp=tmp, submission=submission, function=function, arity=arity)
        if self.outer is not Backend.BWRAP and privilege_plan(self.inner) is Privilege.UID:
            for path in (tmp, submission):
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
        request: dict[str, Any] = {"op": Op.FORK.value, "tmp": tmp, "path": submission}
        request |= {"function": function, "arity": arity}
        answer: dict[str, Any] = {}
        for attempt in range(2):  # a dead template is restarted once per spawn
            self._alive()
            answer, ours, group = self._fork_with_pipes(request, tmp, limits)
            if Op(answer["op"]) is Op.FORKED:
                return self._adopt(answer["pid"], ours, group)
            if attempt == 0:
                time.sleep(0.1)  # out of tasks for a moment, perhaps: try once more
        raise GraderError(f"the template process could not fork a child: {answer['error']}")

    def _spawn_alone(self, *, tmp: str, submission: str, function: str, arity: int) -> Started:
        """Start one learner's child in a bubblewrap of its own; kept until it is waited."""
        with self.lock:
            if self.closed:
                raise GraderError(STOPPING)
        started = spawn_child(
            tmp=tmp,
            submission=submission,
            function=function,
            arity=arity,
            limits=self.limits,
            backend=Backend.BWRAP,
        )
        with self.lock:
            self.children = {p for p in self.children if p.returncode is None}
            self.children.add(started.proc)
            closed = self.closed
        if closed:  # stopped while it started
            started.proc.kill_tree()
        return started

    def _fork_with_pipes(
        self, request: dict[str, Any], tmp: str, limits: Limits
    ) -> tuple[dict[str, Any], list[int], tasks.TaskGroup | None]:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        result_r, result_w = os.pipe()
        widen_pipe(result_w)
        group = tasks.new_group(limits.tasks)  # with no sandbox too, as spawn_child
        request["config"] = {**self._config(tmp, limits, group), "arity": request["arity"]}
        theirs = [stdin_r, stdout_w, stderr_w, result_w]
        # Where the fork finds each (child/zygote.py): the standard three, then its own.
        targets = [0, 1, 2, RESULT_FD]
        if group is not None:
            theirs.append(group.fd)
            targets.append(CGROUP_FD)
        tables = tables_file()
        if tables is not None:
            theirs.append(tables[1])
            targets.append(TABLES_FD)
            request["config"]["tables_fd"] = TABLES_FD
        request["targets"] = targets
        try:
            answer = self._fork(request, theirs)
        finally:
            for fd in theirs:
                os.close(fd)
        ours = [stdin_w, stdout_r, stderr_r, result_r]
        if tables is not None:
            ours.append(tables[0])
        if Op(answer["op"]) is not Op.FORKED:
            for fd in ours:
                os.close(fd)
            if group is not None:
                tasks.release(group.path)
        return answer, ours, group

    def _adopt(self, pid: int, ours: list[int], group: tasks.TaskGroup | None) -> Started:
        stdin_w, stdout_r, stderr_r, result_r, *tables = ours
        proc = ForkedProcess(self.send, pid, (stdin_w, stdout_r, stderr_r), group)
        with self.lock:
            self.ledger.adopt(proc)
        return Started(proc, result_r, time.monotonic(), tables[0] if tables else None)

    def fall_back(self, why: str) -> str:
        """A fork's bubblewrap cannot fail apart from its template's, which fell back
        already (wait_ready): a fork that says so is not believed."""
        raise GraderError(f"the bwrap sandbox could not start: {why}")

    def describe(self) -> str:
        """Return the walls around each child, e.g. 'bwrap + landlock'."""
        self.wait_ready()
        outer = describe_bwrap() if self.outer is Backend.BWRAP else str(self.outer)
        if self.separate:
            return f"{outer}, one per learner"
        if self.inner is self.outer:
            return outer
        return f"{outer} + {self.inner}"

    def stop(self) -> None:
        """Stop the template now (it kills its children as it dies); fork nothing more.

        A walls probe under way answers first (a few milliseconds; WALLS_GRACE at most):
        they are part of every result's settings, which an early stop still needs to tell
        the results kept from an earlier run."""
        asking = self.asking
        if asking is not None and asking is not threading.current_thread():
            asking.join(WALLS_GRACE)
        with self.lock:
            template, self.template_dead, self.closed = self.template, True, True
            children, self.children = self.children, set()
        if not self.separate:
            template.close()
        for child in children:
            child.kill_tree()

    def close(self) -> None:
        """Stop, and delete the batch folder, once: its owner's `with` closes it, and the
        batch may close it sooner (see batch/run.py)."""
        self.stop()
        tempdirs.remove_tree(self.root)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
