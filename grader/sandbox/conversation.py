"""One conversation with one child: its result channel read frame by frame, its deadlines,
the request written as it reads, until every case has answered or it stops."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from grader.errors import GraderError
from grader.sandbox import pipes
from grader.sandbox.answers import (
    Budget,
    CaseInput,
    Ending,
    EndState,
    Raw,
    RawKind,
    Run,
)
from grader.sandbox.frames import (
    Conversation,
    Event,
    Frame,
    FrameReader,
    LoadFailure,
    Phase,
    ProtocolError,
)
from grader.sandbox.limits import Limits
from grader.sandbox.spawn import Started, widen_pipe

# What a pipe holds unless it is grown.
PIPE_HOLDS = 1 << 16


class Pipe(Enum):
    """Which of the child's pipes the selector says is ready."""

    REQUEST = "request"  # its stdin, while the request is being written
    RESULTS = "results"  # its frames
    STDOUT = "stdout"
    STDERR = "stderr"


class Child:
    """One child process: started early, sent the inputs once it has loaded, read until done."""

    def __init__(self, started: Started, limits: Limits) -> None:
        self.proc = started.proc
        self.results_fd = started.results_fd
        self.started = started.at
        self.limits = limits
        # Its memory file for the request's tables, until they are written (fill) or it ends.
        self.tables_fd = started.tables_fd
        # Whether its own tmpfs covered its folder before the submission ran, as its
        # confinement report says: then nothing it did can be left in the folder.
        self.covered = False

    def kill(self) -> None:
        """Kill the child and everything in its process group, then reap it."""
        self.proc.kill_tree()
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            os.close(self.results_fd)
        if self.tables_fd is not None:
            os.close(self.tables_fd)
            self.tables_fd = None

    def fill(self, tables: Sequence[memoryview]) -> bool:
        """Write the request's tables into the child's memory file, now that it has loaded,
        and give the file up; False where it has none or the write failed, and then the
        tables go through the pipe after the line, as everywhere else."""
        fd, self.tables_fd = self.tables_fd, None
        if fd is None:
            return False
        try:
            if not tables:
                return False
            left, offset = list(tables), 0
            while left:  # a write to memory takes all it is given, or fails
                sent = os.pwritev(fd, left[: pipes.IOV_MAX], offset)
                offset += sent
                left = _after(left, sent)
            return True
        except OSError:  # out of memory, a file-size limit on this process: the pipe, then
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # nothing half-written left in the child's file
            import logging  # here only: submit imports no logging on its way

            logging.getLogger(__name__).debug("tables by the pipe: the file", exc_info=True)
            return False
        finally:
            os.close(fd)

    def serve(self, cases: Sequence[CaseInput], run: Run, budget: Budget) -> Ending:
        """Read the child's frames into ``run`` until every case has answered or it stops.

        Whatever the child writes is data: a frame out of bounds or out of order ends the
        conversation as EndState.PROTOCOL, never as an exception of the grader.
        """
        talk = _Talk(self, cases, run, budget)
        try:
            return talk.loop()
        except ProtocolError as exc:
            return Ending(EndState.PROTOCOL, talk.order.current, talk.loaded, detail=str(exc))
        finally:
            talk.sel.close()


class _Talk:
    """One conversation with one child: its selector, its deadlines, what it said so far."""

    def __init__(self, child: Child, cases: Sequence[CaseInput], run: Run, budget: Budget):
        proc = child.proc
        assert proc.stdin and proc.stdout and proc.stderr
        self.child, self.cases, self.run, self.budget = child, cases, run, budget
        self.allowed = {c.id: c for c in cases}
        self.reader = FrameReader(payload_cap=max(c.max_elements for c in cases) * 8)
        self.order = Conversation([c.id for c in cases])
        self.sel = pipes.selector()
        self.sel.register(child.results_fd, selectors.EVENT_READ, Pipe.RESULTS)
        self.sel.register(proc.stdout, selectors.EVENT_READ, Pipe.STDOUT)
        self.sel.register(proc.stderr, selectors.EVENT_READ, Pipe.STDERR)
        pipes.set_nonblocking(proc.stdin.fileno())
        # What is left of the request to write, in parts (its line, then each table's bytes).
        self.pending: list[memoryview] = []
        limits = child.limits
        self.deadline = child.started + limits.startup_seconds
        # However the frames come, the child gets no more than its start-up plus every case's
        # time: a submission that forges progress frames still meets this wall.
        self.hard_deadline = self.deadline + limits.case_seconds * len(cases)
        self.case_started = 0.0
        self.ending: Ending | None = None
        # The last limit at which what had already arrived was read before judging the
        # clock: the parent may have been busy (loading the problem) while the child spoke.
        self.drained_at: float | None = None

    @property
    def loaded(self) -> bool:
        return self.order.phase not in (Phase.STARTING, Phase.CONFINED)

    def loop(self) -> Ending:
        while self.ending is None:
            now = time.monotonic()
            if self.budget.spent(now):
                return Ending(EndState.BUDGET, self.order.current, self.loaded)
            limit = min(self.deadline, self.hard_deadline, self.budget.end or self.hard_deadline)
            wait = limit - now
            if now >= limit:
                # What the child said in time counts, though the parent reads it late: read
                # what is there once, then judge the clock again (a new frame may move it).
                if self.drained_at == limit:
                    return self.stopped(EndState.TIMEOUT)
                self.drained_at, wait = limit, 0.0
            for key, _ in self.sel.select(wait):
                if key.data is Pipe.REQUEST:
                    self.write_request(key.fd)
                else:
                    self.read(key)
                if self.ending is not None:
                    break
        return self.ending

    def write_request(self, fd: int) -> None:
        """Write what the pipe takes of the request; close the child's stdin once all is in."""
        try:
            sent = pipes.write_parts(fd, self.pending)
        except BlockingIOError:
            sent = 0
        except BrokenPipeError:
            sent = sum(part.nbytes for part in self.pending)
        self.pending = _after(self.pending, sent)
        if not self.pending:
            stdin = self.child.proc.stdin
            assert stdin is not None
            with contextlib.suppress(KeyError):  # registered only if the pipe was full once
                self.sel.unregister(stdin)
            stdin.close()

    def read(self, key: selectors.SelectorKey) -> None:
        sink = self.reader.sink() if key.data is Pipe.RESULTS else None
        if sink is not None:
            # The rest of a large answer: read straight into the buffer it is judged from.
            count = pipes.read_into(key.fd, sink)
            if count:
                self.on_frames(self.reader.filled(count))
                return
            chunk = b""
        else:
            chunk = os.read(key.fd, 1 << 20)
        if key.data is Pipe.STDOUT:
            self.run.stdout.feed(chunk)
        elif key.data is Pipe.STDERR:
            self.run.stderr.feed(chunk)
        if not chunk:
            self.sel.unregister(key.fileobj)
            if key.data is Pipe.RESULTS:
                self.ending = self.stopped(EndState.CRASH)
            return
        if key.data is Pipe.RESULTS:
            self.on_frames(self.reader.feed(chunk))

    def on_frames(self, frames: list[Frame]) -> None:
        for frame in frames:
            try:
                self.on_frame(frame)
            except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
                # The frame passed the reader's checks and still could not be used:
                # whatever it held, it is the child's doing, not a failure of ours.
                raise ProtocolError(f"unusable {frame.event.value} frame") from exc
            if self.ending is not None:
                return

    def on_frame(self, frame: Frame) -> None:
        now = time.monotonic()
        event, header = frame.event, frame.header
        # An answer is made usable before its case's turn is taken: one that cannot be is
        # charged to its own case, the one running, never to the case after it.
        raw = self.answer_of(frame, now) if event is Event.RESULT else None
        self.order.accept(frame)
        info = {k: v for k, v in header.items() if k not in ("event", "nbytes")}
        if event is Event.CONFINE_ERROR:
            # Sent before any of the submission ran: the child's own start failed (its walls,
            # or its memory reserve under the limits given): the settings', not the learner's.
            raise GraderError(
                f"the child could not start under the {self.run.backend} sandbox: "
                f"{header.get('message')}"
            )
        if event is Event.CONFINED:
            self.run.confinement = info
            self.child.covered = info.get("own_tmpfs") is True
        elif event is Event.LOAD_ERROR:
            failure = LoadFailure(header["kind"])  # one of them: frames checked it
            for c in self.cases:
                self.run.results[c.id] = Raw(RawKind.LOAD_ERROR, info=info, failure=failure)
            self.ending = Ending(EndState.LOAD_ERROR)
        elif event is Event.LOADED:
            # Only now does the child learn any input; the first case runs from here on,
            # and every case's time counts from here, however late the parent read this.
            self.budget.start(now)
            self.case_started = now
            self.hard_deadline = now + self.child.limits.case_seconds * len(self.cases)
            parts = _request(tuple(self.cases), shared=False)
            if self.child.fill(parts[1:]):
                parts = _request(tuple(self.cases), shared=True)
            self.pending = list(parts)
            assert self.child.proc.stdin is not None
            if sum(part.nbytes for part in self.pending) > PIPE_HOLDS:
                # Megabytes of tables: in 1 MiB writes, not 64 KiB ones, each of which waits
                # for the child to read and this thread to be scheduled again.
                widen_pipe(self.child.proc.stdin.fileno())
            # Most requests fit the pipe: written at once, without waiting to be told the
            # pipe is writable; a larger one goes on as the child reads.
            self.write_request(self.child.proc.stdin.fileno())
            if self.pending:
                self.sel.register(self.child.proc.stdin, selectors.EVENT_WRITE, Pipe.REQUEST)
        elif raw is not None:  # a result
            self.run.results[header["case"]] = raw
            self.case_started = now  # the next case runs from here on
        elif event is Event.DONE:
            self.drain()
            self.ending = Ending(EndState.DONE, None, True)
        if self.loaded:
            self.deadline = now + self.child.limits.case_seconds

    def answer_of(self, frame: Frame, now: float) -> Raw:
        """Return a result frame's answer, checked against the case it names."""
        case = self.allowed[frame.header["case"]]
        return raw_answer(frame.header, frame.payload, case, now - self.case_started)

    def stopped(self, state: EndState) -> Ending:
        """Classify a child that stopped talking: every answer in counts as done."""
        self.drain()
        order = self.order
        if order.phase is Phase.LOADED and not order.upcoming:
            return Ending(EndState.DONE, None, True)
        # Only the first child's stderr, before it said anything, is bubblewrap's own: later,
        # what was written there may be a submission's, and is never repeated.
        first = self.run.spawns == 1
        stderr = bytes(self.run.stderr.data)
        if first and order.phase is Phase.STARTING and stderr.startswith(b"bwrap:"):
            return Ending(EndState.SANDBOX_FAILED)
        if state is EndState.CRASH:
            # The result channel closed; the process may live on (it closed it itself, say):
            # wait for it only until the deadline.
            limit = min(self.deadline, self.hard_deadline, self.budget.end or self.hard_deadline)
            try:
                self.child.proc.wait(timeout=max(limit - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                state = EndState.TIMEOUT
        return Ending(state, order.current, self.loaded)

    def drain(self) -> None:
        """Keep what the child printed before it stopped (it flushes before "done")."""
        proc = self.child.proc
        assert proc.stdout and proc.stderr
        for stream, capture in ((proc.stdout, self.run.stdout), (proc.stderr, self.run.stderr)):
            with contextlib.suppress(OSError, ValueError):
                while not capture.dropped and (chunk := pipes.read_now(stream.fileno(), 1 << 20)):
                    capture.feed(chunk)


def raw_answer(
    header: Mapping[str, Any], payload: bytes | memoryview, case: CaseInput, seconds: float
) -> Raw:
    """Validate a result frame into a Raw, with the payload as a fresh float64 array.

    The time is the child's own measurement of the call when it is plausible (frames often
    arrive together, so arrival times say little); it is shown on visible examples only,
    never judged.
    """
    timed = header.get("seconds")
    if isinstance(timed, float) and 0.0 <= timed <= seconds + 1.0:
        seconds = timed
    kind = RawKind(header["kind"])  # one of the result kinds: frames checked it
    info = {
        k: v for k, v in header.items() if k not in ("event", "case", "kind", "nbytes", "seconds")
    }
    if kind is not RawKind.OK:
        return Raw(kind, seconds, info=info)
    shape = header.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 4
        # Each axis bounded too: a zero elsewhere must not let one hold an enormous number.
        or not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= case.max_elements
            for n in shape
        )
    ):
        raise ProtocolError("bad shape")
    count = math.prod(shape)
    if count > case.max_elements or count * 8 != len(payload):
        raise ProtocolError("payload does not match its shape")
    import numpy as np  # here, not at the top: the parent imports it after the child starts

    # Read-only, over bytes this function owns: nothing the child does can change it.
    array = np.frombuffer(payload, dtype=np.float64).reshape(shape)
    dtype = header.get("dtype")
    return Raw(RawKind.OK, seconds, array, dtype if isinstance(dtype, str) else None)


def _after(parts: list[memoryview], sent: int) -> list[memoryview]:
    """Return what is left of ``parts`` once their first ``sent`` bytes are written."""
    left = list(parts)
    while left and sent >= left[0].nbytes:
        sent -= left.pop(0).nbytes
    if left and sent:
        left[0] = left[0][sent:]
    return left


@functools.lru_cache(maxsize=32)
def _request(cases: tuple[CaseInput, ...], *, shared: bool) -> tuple[memoryview, ...]:
    """Return the request for these cases, in parts; a batch sends the same one to every
    child.

    One line of JSON, then the tables' bytes: each case lists where its own lie among them
    (offset and count of float64s), so that a child reads them without a copy, and the
    line gives their total, which the child reads into a buffer of that size. The tables
    are written from the parent's own read-only copies, never joined into one more. Where
    they were written to the child's memory file (``shared``), the line says so and is the
    whole request.
    """
    header = []
    blobs: list[memoryview] = []
    offset = 0
    for c in cases:
        places = []
        for blob in c.blobs:
            view = memoryview(blob).cast("B")
            places.append([offset, view.nbytes // 8])
            blobs.append(view)
            offset += view.nbytes
        header.append(
            f'{{"id": {c.id}, "args": {c.args}, "blobs": {json.dumps(places)}, '
            f'"max_elements": {c.max_elements}}}'
        )
    where = ', "shared": true' if shared else ""
    line = f'{{"cases": [{", ".join(header)}], "bytes": {offset}{where}}}\n'
    return (memoryview(line.encode()),) if shared else (memoryview(line.encode()), *blobs)
