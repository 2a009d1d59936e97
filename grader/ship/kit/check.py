"""`check(FUNCTION)` in a notebook: the live function graded on the kit's visible examples
and probes, in the kernel's own process, through the very verdicts `run` gives.

No notebook file is needed (Colab has none on disk): the function object is called as it
is defined, with its globals. There is no wall around it: a kit holds no secret, and the
code is the learner's own. A timer stops a call that runs past the time limit.
"""

from __future__ import annotations

import _thread
import inspect
import json
import linecache
import signal
import threading
import time
import types
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.pipeline import UNWALLED_WARNING, Answered, inputs, judge_run
from grader.problem.exercise import load_exercise
from grader.problem.layout import kit_root
from grader.sandbox.answers import Capture, CaseInput, Raw, RawKind, Run, Stage
from grader.sandbox.limits import Limits
from grader.ship.kit.kitreport import KitReport, modules_used
from grader.states import Backend, Mode
from grader.submission.source import Source, Static

# What the report says of where the function ran.
IN_KERNEL = "this kernel, no walls"


def check(function: Callable[..., Any] | None = None, *, timeout: float | None = None) -> KitReport:
    """Grade ``function`` (else the exercise's function, found by name where check is
    called) on the kit's visible examples and probes; return the report."""
    root = kit_root()
    exercise = load_exercise(root)
    if function is None:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        names = {} if caller is None else {**caller.f_globals, **caller.f_locals}
        function = names.get(exercise.function)
        if function is None:
            raise NameError(
                f"no {exercise.function} defined here: define it first, or give it, "
                f"check({exercise.function})"
            )
    if not callable(function) or isinstance(function, str | bytes | Path):
        raise TypeError(
            f"check takes the function itself, such as check({exercise.function}); "
            f"for a file, use the kit's command: `{exercise.kit} run FILE`"
        )
    limits = Limits() if timeout is None else Limits(case_seconds=timeout)
    return _grade(function, root, limits)


def _grade(function: Callable[..., Any], root: Path, limits: Limits) -> KitReport:
    from grader.problem.cases import check_expected, load_problem

    began = time.monotonic()
    problem = load_problem(root)
    cases = problem.examples + problem.probes
    checked = check_expected(problem, examples=True, hidden=False)
    run = Run(
        results={},
        stdout=Capture(limits.output_bytes),
        stderr=Capture(limits.output_bytes),
        backend=Backend.NONE,
        confinement={"backend": Backend.NONE.value, "unwalled": True},
    )
    path = _file_of(function)
    for case in inputs(cases, problem.rules.inputs):
        run.results[case.id] = call(function, case, limits.case_seconds, path)
    name = _name_of(function, problem.rules.exercise.function)
    src = Source(name=name, text="".join(linecache.getlines(path)))
    answered = Answered(run=run, src=src, static=Static(None), checked=checked, limits=limits)
    report = judge_run(answered, mode=Mode.RUN, began=began)
    # Said in the report's own headline: it ran here, in the kernel, not in a child.
    warnings = tuple(w for w in report.warnings if w != UNWALLED_WARNING)
    report = replace(report, backend=IN_KERNEL, warnings=warnings, extra={})
    return KitReport(
        report,
        probes=answered.of(problem.probes, start=len(problem.examples)),
        tolerances=[case.tolerance for case in cases],
        modules=modules_used(function),
    )


def _file_of(function: Callable[..., Any]) -> str:
    try:
        # A __wrapped__ that loops back on itself makes unwrap raise; any attribute may.
        code = getattr(inspect.unwrap(function), "__code__", None)
        name = code.co_filename if isinstance(code, types.CodeType) else None
    except Exception:  # noqa: BLE001 - what the learner's object holds is data
        name = None
    return name if isinstance(name, str) else "<function>"


def _name_of(function: Callable[..., Any], default: str) -> str:
    try:
        name = getattr(function, "__name__", default)
    except Exception:  # noqa: BLE001 - what the learner's object holds is data
        name = default
    return name if isinstance(name, str) else default


def arguments(case: CaseInput) -> list[Any]:
    """Return a case's arguments as the learner's function takes them, decoded as the
    child decodes them."""
    from grader.child import request as child_request

    places, offset = [], 0
    for blob in case.blobs:
        places.append([offset, len(blob) // 8])
        offset += len(blob)
    # A buffer of its own, as the child reads its request into: an array is given over it.
    tables = bytearray(b"".join(case.blobs))
    return [child_request.argument(value, places, tables) for value in json.loads(case.args)]


def call(function: Callable[..., Any], case: CaseInput, seconds: float, path: str) -> Raw:
    """Call ``function`` on one case in this thread; a timer interrupts it at ``seconds``.

    The answer is encoded and validated as the child's is, so that every verdict is the
    one `run` gives the same answer. The timer stays armed through the encoding (an
    ``__array__`` of the learner's runs there), and the time is the one measured: a call
    that returned after the limit is a timeout, as in `run`, never a pass.
    """
    from grader.child import run as child
    from grader.sandbox.conversation import raw_answer

    timer = _Timer(seconds)
    began = time.perf_counter()
    try:
        try:
            with timer:
                result = function(*arguments(case))
                header, payload = child._encode(result, case.max_elements)
                # A copy of its bytes, as the child's frame carries them: the function keeps
                # its table.
                data = bytes(memoryview(payload).cast("B")) if len(payload) else b""
        except MemoryError:
            header, data = {"kind": "memory"}, b""
        except KeyboardInterrupt:
            if not timer.fired:
                raise  # the learner's own stop (the Interrupt button): check ends as a cell does
            return _late(began)
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are answers too
            header, data = {"kind": "exception", **child._exception(exc, path)}, b""
    except KeyboardInterrupt:
        # The timer's interrupt, arriving just after the call had returned.
        if not timer.fired:
            raise
        return _late(began)
    taken = time.perf_counter() - began
    if timer.fired or taken > seconds:
        return _late(began)
    return raw_answer({"seconds": taken, **header}, data, case, taken)


def _late(began: float) -> Raw:
    """Return a timeout, with the time the call really took."""
    return Raw(RawKind.TIMEOUT, time.perf_counter() - began, stage=Stage.CALL)


class TimeUp(KeyboardInterrupt):
    """Raised in the call once its time is up, again and again until it ends."""


# After the first interrupt, the timer raises TimeUp in the call this often until it ends: a
# function that catches one interrupt, or ignores SIGINT, is stopped at its next line.
REPEAT_SECONDS = 0.25


class _Timer:
    """Interrupt the main thread once ``seconds`` have passed, unless disarmed first.

    The call runs under Python's own Ctrl-C handler (the notebook's is put back after it).
    At the limit the thread gets SIGINT (which also wakes a sleep) and then, until the call
    ends, an asynchronous TimeUp. Neither stops a call blocked in C code (a long numpy
    operation, a sleep with SIGINT ignored): that call runs on until it returns, and is
    then reported as the timeout it was, with the time it took.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.armed = False
        self.fired = False
        self.main = threading.main_thread().ident or 0
        self.previous: Any = None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> _Timer:
        # Only the main thread can be interrupted: elsewhere the call runs to its end.
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.armed = True
            self.thread = threading.Thread(target=self._watch, daemon=True)
            self.thread.start()
        return self

    def _watch(self) -> None:
        delay = self.seconds
        while not self.done.wait(delay):
            with self.lock:
                if not self.armed:
                    return
                _interrupt(self.main, again=self.fired)
                self.fired = True
            delay = REPEAT_SECONDS

    def __exit__(self, *exc: object) -> None:
        if self.thread is None:
            return
        # Each step may meet the interrupt sent just before it: the next ones run all the same.
        try:
            with self.lock:
                self.armed = False
        finally:
            self.done.set()
            try:
                self.thread.join()
            finally:
                _async_raise(self.main, None)
                if self.previous is not None:
                    signal.signal(signal.SIGINT, self.previous)


def _interrupt(thread: int, *, again: bool) -> None:
    """Interrupt the main thread: SIGINT first, then TimeUp raised in it."""
    if again:
        _async_raise(thread, TimeUp)
    elif hasattr(signal, "pthread_kill"):
        signal.pthread_kill(thread, signal.SIGINT)
    else:
        _thread.interrupt_main()


def _async_raise(thread: int, kind: type[BaseException] | None) -> None:
    """Raise ``kind`` in ``thread`` at its next line of Python (None: forget one pending)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread), ctypes.py_object(kind) if kind else None
    )
