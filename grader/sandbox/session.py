"""Run a submission in a child interpreter, case by case, within limits.

The parent sends the child only the inputs of the cases, reads back frames (see child/run.py),
and validates every byte before anything else sees it. A case that hangs or crashes its
child is marked and the child is started again for the cases that remain.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

from grader.sandbox.answers import (
    Budget,
    Capture,
    CaseInput,
    Ending,
    EndState,
    Raw,
    RawKind,
    Run,
    Stage,
)
from grader.sandbox.conversation import Child
from grader.sandbox.limits import Limits
from grader.sandbox.spawn import Launch, private_folder
from grader.sandbox.tempdirs import remove_tree


class Session:
    """One submission's private folder and children, from its Launch on.

    The first child was started by the Launch, before the parent imported numpy: it
    imports numpy and the submission while the parent loads the problem. The children
    after it come from the Launch's spawner, each in a fresh folder.
    """

    def __init__(self, launch: Launch, limits: Limits) -> None:
        self.launch = launch
        self.limits = limits
        self.tmp = launch.tmp
        self.notes: list[str] = []
        self.child: Child | None = Child(launch.first, limits)
        # Whether the child that had self.tmp said its own tmpfs covered it (see staging).
        self.covered = False

    def _spawn(self) -> Child:
        """Start another child, in a fresh folder: nothing the last one wrote is left for it."""
        launch, spawner = self.launch, self.launch.spawner
        self._let_go()
        self.tmp, submission = private_folder(
            launch.source, spawner.root, launch.beside, spawner.kept
        )
        started = spawner.spawn(
            tmp=self.tmp, submission=str(submission), function=launch.function, arity=launch.arity
        )
        return Child(started, self.limits)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill any child still running, and delete its private folder; once.

        At once, in the thread that graded it: a thread of its own deleting the folders
        contended for the GIL with the batch's workers and the judging, and cost more CPU
        and wall time than the kernel's release of the child's mounts it overlapped."""
        if self.child is not None:
            self.child.close()
            self.child = None
        if self.tmp:
            self._let_go()

    def _let_go(self) -> None:
        """Delete the private folder, or keep it for the batch's next learner (see staging);
        either way it is this session's no more: a folder that cannot be made next must not
        let this one go twice (kept, it may be another learner's by then)."""
        kept = self.launch.spawner.kept
        if kept is None:
            remove_tree(self.tmp)
        else:
            kept.keep(self.tmp, covered=self.covered)
        self.tmp, self.covered = "", False

    def run(self, cases: Sequence[CaseInput]) -> Run:
        """Run every case in fresh children until each one has an answer or the budget ends."""
        run = Run(
            results={},
            stdout=Capture(self.limits.output_bytes),
            stderr=Capture(self.limits.output_bytes),
            backend=self.launch.spawner.backend,
        )
        budget = Budget(self.limits.budget_seconds)
        remaining = list(cases)
        first = True
        while remaining:
            if budget.spent(time.monotonic()):
                _not_run(run, remaining)
                break
            child = self.child if self.child is not None else self._spawn()
            self.child = None
            run.spawns += 1
            try:
                ending = child.serve(remaining, run, budget)
            finally:
                child.close()
                self.covered = child.covered
            if ending.state is EndState.SANDBOX_FAILED:
                self._fall_back(run)
                continue
            if not _record(ending, run, remaining, child.proc.returncode, first=first):
                break
            remaining = [c for c in remaining if c.id not in run.results]
            first = False
        run.notes = list(self.notes)
        return run

    def _fall_back(self, run: Run) -> None:
        """Switch backend after bubblewrap failed to start, or stop with its message."""
        message = bytes(run.stderr.data).decode(errors="replace").strip().splitlines()
        spawner = self.launch.spawner
        self.notes.append(spawner.fall_back(message[0] if message else "bwrap failed"))
        run.backend = spawner.backend
        run.stderr = Capture(self.limits.output_bytes)
        run.stdout = Capture(self.limits.output_bytes)


def _not_run(run: Run, cases: Sequence[CaseInput]) -> None:
    for c in cases:
        run.results.setdefault(c.id, Raw(RawKind.NOT_RUN))


def _record(
    ending: Ending, run: Run, remaining: Sequence[CaseInput], rc: int | None, *, first: bool
) -> bool:
    """Record how a child ended into ``run``; return True if a new child should go on."""
    state = ending.state
    stopped = functools.partial(Raw, ended=state, returncode=rc)
    if state is EndState.DONE:
        return False
    if state is EndState.LOAD_ERROR:
        if not first:
            # A file that loaded once and fails to load again did so on purpose or by
            # accident, after it had seen inputs: nothing of what it said is shown.
            for c in remaining:
                run.results[c.id] = stopped(RawKind.CRASH, stage=Stage.RELOAD)
        return False
    if ending.case is None and state is EndState.BUDGET:
        _not_run(run, remaining)
        return False
    if not ending.loaded:
        # The child died or hung before it could run anything: at import time.
        kind = RawKind.TIMEOUT if state is EndState.TIMEOUT else RawKind.CRASH
        stage = Stage.IMPORT if first else Stage.RELOAD
        for c in remaining:
            run.results[c.id] = stopped(kind, stage=stage)
        return False
    if ending.case is None:
        # After every answer was in, a malformed frame: nothing more can be trusted.
        for c in remaining:
            run.results.setdefault(c.id, stopped(RawKind.CRASH, stage=Stage.CALL))
        return False
    kind = RawKind.TIMEOUT if state in (EndState.TIMEOUT, EndState.BUDGET) else RawKind.CRASH
    run.results[ending.case] = stopped(kind, stage=Stage.CALL)
    if state is EndState.BUDGET:
        _not_run(run, remaining)
        return False
    return True
