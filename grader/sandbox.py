"""Run a submission in a child interpreter, case by case, within limits.

The parent sends the child only the inputs of the cases, reads back frames (see child/run.py),
and validates every byte before anything else sees it. A case that hangs or crashes its
child is marked and the child is started again for the cases that remain.
"""

from __future__ import annotations

import functools
import json
import math
import os
import selectors
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from grader.errors import GraderError
from grader.spawn import Launch, Limits, Started
from grader.walls import (
    FALLBACK_REQUIRED,
    Choice,
    second_choice,
)

if TYPE_CHECKING:
    from grader.compare import Array

MAX_HEADER = 64 * 1024


@dataclass(frozen=True)
class CaseInput:
    """What the child is told about one case: its inputs and nothing more."""

    id: int
    positions: tuple[int, ...]
    d_model: int

    @property
    def max_elements(self) -> int:
        """Return how many values the parent accepts back for this case."""
        # Room for plausible wrong shapes (e.g. a full d_model x d_model table) but bounded.
        return max(4 * len(self.positions) * self.d_model, 4096)


class Kind(Enum):
    """What became of one case in the child, before any comparison."""

    OK = "ok"
    EXCEPTION = "exception"
    BAD_VALUE = "bad_value"
    MEMORY = "memory"
    TIMEOUT = "timeout"
    CRASH = "crash"
    LOAD_ERROR = "load_error"


@dataclass(frozen=True)
class Raw:
    """The validated answer for one case, straight from the child."""

    kind: Kind
    seconds: float = 0.0
    array: Array | None = None
    dtype: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Capture:
    """A bounded copy of one output stream of the child."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[: max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        """Return the kept output, with a marker where the rest was dropped."""
        body = self.data.decode("utf-8", "replace")
        if self.dropped:
            body += f"\n[... {self.dropped} more bytes dropped]"
        return body


@dataclass
class Run:
    """Everything a submission did across its children."""

    results: dict[int, Raw]
    stdout: Capture
    stderr: Capture
    backend: str
    spawns: int = 0
    confinement: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class ProtocolError(Exception):
    """The child sent something that is not a well-formed frame."""


def signal_name(returncode: int) -> str:
    """Return e.g. 'SIGSEGV' for a negative return code."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class Child:
    """One child process: started early, fed a request once, read until it ends."""

    def __init__(self, started: Started, limits: Limits) -> None:
        self.proc = started.proc
        self.results_fd = started.results_fd
        self.started = started.at
        self.limits = limits

    def kill(self) -> None:
        """Kill the child and everything in its process group, then reap it."""
        self.proc.kill_tree()
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        os.close(self.results_fd)

    def serve(self, request: bytes, cases: Sequence[CaseInput], run: Run) -> tuple[str, int | None]:
        """Send the request, collect results into ``run``; return how the child ended.

        The return value is (state, case): state is "done", "load_error", "timeout" or
        "crash", and case the id of the case that was running, if any.
        """
        allowed = {c.id: c for c in cases}
        sel = selectors.DefaultSelector()
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        os.set_blocking(self.proc.stdin.fileno(), False)
        pending = memoryview(request)
        sel.register(self.proc.stdin, selectors.EVENT_WRITE, "stdin")
        sel.register(self.results_fd, selectors.EVENT_READ, "results")
        sel.register(self.proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(self.proc.stderr, selectors.EVENT_READ, "stderr")
        buf = bytearray()
        deadline = self.started + self.limits.startup_seconds
        # However the frames come, the child gets no more than its start-up plus every case's
        # time: a submission that forges progress frames still meets this wall.
        hard_deadline = deadline + self.limits.case_seconds * len(cases)
        upcoming = [c.id for c in cases]
        loaded = confined = False
        current: int | None = None
        case_started = 0.0
        open_reads = 3
        try:
            while open_reads:
                timeout = min(deadline, hard_deadline) - time.monotonic()
                if timeout <= 0:
                    return ("timeout", current)
                for key, _ in sel.select(timeout):
                    if key.data == "stdin":
                        try:
                            sent = os.write(key.fd, pending)
                        except BrokenPipeError:
                            sent = len(pending)
                        pending = pending[sent:]
                        if not pending:
                            sel.unregister(key.fileobj)
                            self.proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 1 << 20)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        open_reads -= 1
                        continue
                    if key.data == "stdout":
                        run.stdout.feed(chunk)
                        continue
                    if key.data == "stderr":
                        run.stderr.feed(chunk)
                        continue
                    buf += chunk
                    for header, payload in _frames(buf, allowed):
                        now = time.monotonic()
                        event = header["event"]
                        # The confinement report comes first, before any submission code
                        # runs; later, such a frame can only be the submission's forgery.
                        if (event in ("confined", "confine_error")) == confined:
                            raise ProtocolError("confinement frame out of order")
                        confined = True
                        if event == "confine_error":
                            raise GraderError(
                                f"the {run.backend} sandbox could not be applied: "
                                f"{header.get('message')}"
                            )
                        if event == "confined":
                            run.confinement = {
                                k: v for k, v in header.items() if k not in ("event", "nbytes")
                            }
                        elif event == "load_error":
                            info = {k: v for k, v in header.items() if k not in ("event", "nbytes")}
                            for c in cases:
                                run.results[c.id] = Raw(Kind.LOAD_ERROR, info=info)
                            return ("load_error", None)
                        if event == "loaded":
                            loaded = True
                        elif event == "start":
                            # Cases start one at a time, in the order they were sent.
                            cid = _case_id(header, allowed, run)
                            if current is not None or not upcoming or cid != upcoming[0]:
                                raise ProtocolError(f"case {cid} started out of turn")
                            current = upcoming.pop(0)
                            case_started = now
                        elif event == "result":
                            cid = _case_id(header, allowed, run)
                            if cid != current:
                                raise ProtocolError(f"result for case {cid}, which is not running")
                            run.results[cid] = _raw(
                                header, payload, allowed[cid], now - case_started
                            )
                            current = None
                        elif event == "done":
                            pass
                        if loaded:
                            deadline = now + self.limits.case_seconds
            if buf:
                raise ProtocolError("trailing bytes after the last frame")
        except ProtocolError as exc:
            return ("protocol:" + str(exc), current)
        finally:
            sel.close()
        # Every output is closed, but the process may live on (it closed them itself, say):
        # wait only until the deadline.
        try:
            self.proc.wait(timeout=max(min(deadline, hard_deadline) - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            return ("timeout", current)
        if not confined and bytes(run.stderr.data).startswith(b"bwrap:"):
            return ("sandbox_failed", None)
        if not loaded:
            return ("crash", None)
        if current is not None or any(c.id not in run.results for c in cases):
            return ("crash", current)
        return ("done", None)


def _case_id(header: dict[str, Any], allowed: dict[int, CaseInput], run: Run) -> int:
    cid = header.get("case")
    if isinstance(cid, bool) or not isinstance(cid, int) or cid not in allowed:
        raise ProtocolError(f"unknown case id {cid!r}")
    if cid in run.results:
        raise ProtocolError(f"case {cid} answered twice")
    return cid


def _frames(buf: bytearray, allowed: dict[int, CaseInput]) -> list[tuple[dict[str, Any], bytes]]:
    """Pop every complete frame off the front of ``buf``."""
    cap = max(c.max_elements for c in allowed.values()) * 8
    out = []
    while len(buf) >= 4:
        (size,) = struct.unpack(">I", buf[:4])
        if size > MAX_HEADER:
            raise ProtocolError("header too large")
        if len(buf) < 4 + size:
            break
        try:
            header = json.loads(bytes(buf[4 : 4 + size]))
        except (ValueError, UnicodeDecodeError):
            raise ProtocolError("header is not JSON") from None
        if not isinstance(header, dict) or header.get("event") not in {
            "confined",
            "confine_error",
            "loaded",
            "load_error",
            "start",
            "result",
            "done",
        }:
            raise ProtocolError("unknown frame")
        nbytes = header.get("nbytes")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 <= nbytes <= cap:
            raise ProtocolError("payload size out of bounds")
        if len(buf) < 4 + size + nbytes:
            break
        with memoryview(buf) as view:  # one copy, and released before buf shrinks
            payload = bytes(view[4 + size : 4 + size + nbytes])
        del buf[: 4 + size + nbytes]
        out.append((header, payload))
    return out


def _raw(header: dict[str, Any], payload: bytes, case: CaseInput, seconds: float) -> Raw:
    """Validate a result frame into a Raw, with the payload as a fresh float64 array.

    The time is the child's own measurement of the call when it is plausible (frames often
    arrive together, so arrival times say little); it is shown, never judged.
    """
    timed = header.get("seconds")
    if isinstance(timed, float) and 0.0 <= timed <= seconds + 1.0:
        seconds = timed
    kind = header.get("kind")
    info = {
        k: v for k, v in header.items() if k not in ("event", "case", "kind", "nbytes", "seconds")
    }
    if kind == "ok":
        shape = header.get("shape")
        if (
            not isinstance(shape, list)
            or len(shape) > 4
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            raise ProtocolError("bad shape")
        count = math.prod(shape)
        if count > case.max_elements or count * 8 != len(payload):
            raise ProtocolError("payload does not match its shape")
        import numpy as np  # here, not at the top: the parent imports it after the child starts

        # Read-only, over bytes this function owns: nothing the child does can change it.
        array = np.frombuffer(payload, dtype=np.float64).reshape(shape)
        dtype = header.get("dtype")
        return Raw(Kind.OK, seconds, array, dtype if isinstance(dtype, str) else None)
    if kind in ("exception", "bad_value", "memory"):
        return Raw(Kind(kind), seconds, info=info)
    raise ProtocolError(f"unknown result kind {kind!r}")


@functools.lru_cache(maxsize=32)
def _request(cases: tuple[CaseInput, ...]) -> bytes:
    """Return the request for these cases; a batch sends the same one to every child."""
    return json.dumps(
        {
            "cases": [
                {
                    "id": c.id,
                    "positions": list(c.positions),
                    "d_model": c.d_model,
                    "max_elements": c.max_elements,
                }
                for c in cases
            ]
        }
    ).encode()


class Session:
    """One submission's private folder and children, from its Launch on.

    The first child was started by the Launch, before the parent imported numpy: it
    imports numpy and the submission while the parent loads the problem.
    """

    def __init__(self, launch: Launch, *, fallback: str | None = None) -> None:
        self.limits = launch.limits
        self.backend = launch.backend
        self.function = launch.function
        # Where bwrap turns out not to work, the backend to use instead (auto mode only).
        self.fallback = fallback
        self.spawner = launch.spawner
        self.tmp = launch.tmp
        self.submission = launch.submission
        self.notes: list[str] = []
        self.child: Child | None = Child(launch.first, self.limits)

    def _spawn(self) -> Child:
        started = self.spawner(
            tmp=self.tmp,
            submission=str(self.submission),
            function=self.function,
            limits=self.limits,
            backend=self.backend,
        )
        return Child(started, self.limits)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill any child still running and delete the private folder."""
        if self.child is not None:
            self.child.close()
            self.child = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cases: Sequence[CaseInput]) -> Run:
        """Run every case in fresh children until each one has an answer."""
        run = Run(
            results={},
            stdout=Capture(self.limits.output_bytes),
            stderr=Capture(self.limits.output_bytes),
            backend=self.backend,
        )
        remaining = list(cases)
        while remaining:
            child = self.child if self.child is not None else self._spawn()
            self.child = None
            run.spawns += 1
            try:
                state, current = child.serve(_request(tuple(remaining)), remaining, run)
            finally:
                child.close()
            rc = child.proc.returncode
            if state == "sandbox_failed":
                self._fall_back(run)
                continue
            if state in ("done", "load_error"):
                break
            if current is None and state in ("timeout", "crash"):
                # The child died or hung before it could run anything: at import time.
                info = {"phase": "import", "returncode": rc, "state": state}
                kind = Kind.TIMEOUT if state == "timeout" else Kind.CRASH
                for c in remaining:
                    run.results[c.id] = Raw(kind, info=info)
                break
            if current is None:
                # A malformed frame outside any case: nothing more can be trusted.
                for c in remaining:
                    if c.id not in run.results:
                        run.results[c.id] = Raw(Kind.CRASH, info={"state": state, "phase": "call"})
                break
            kind = Kind.TIMEOUT if state == "timeout" else Kind.CRASH
            run.results[current] = Raw(
                kind, info={"returncode": rc, "state": state, "phase": "call"}
            )
            remaining = [c for c in remaining if c.id not in run.results]
        run.notes = list(self.notes)
        return run

    def _fall_back(self, run: Run) -> None:
        """Switch backend after bubblewrap failed to start, or stop with its message."""
        message = bytes(run.stderr.data).decode(errors="replace").strip().splitlines()
        first = message[0] if message else "bwrap failed"
        if self.fallback is None:
            raise GraderError(f"the bwrap sandbox could not start: {first}")
        backend = second_choice(require=self.fallback == FALLBACK_REQUIRED)
        self.notes.append(f"bubblewrap could not start here ({first}); used {backend}")
        self.backend, self.fallback = backend, None
        run.backend = self.backend
        run.stderr = Capture(self.limits.output_bytes)
        run.stdout = Capture(self.limits.output_bytes)


def run_submission(
    *, source: bytes, cases: Sequence[CaseInput], limits: Limits, function: str, choice: Choice
) -> Run:
    """Run every case of one submission in a fresh session."""
    launch = Launch(source=source, limits=limits, backend=choice.backend, function=function)
    with Session(launch, fallback=choice.fallback) as session:
        return session.run(cases)
