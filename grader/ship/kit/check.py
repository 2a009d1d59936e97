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
import threading
import time
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
    name = getattr(function, "__name__", problem.rules.exercise.function)
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
    code = getattr(inspect.unwrap(function), "__code__", None)
    return code.co_filename if code is not None else "<function>"


def arguments(case: CaseInput) -> list[Any]:
    """Return a case's arguments as the learner's function takes them, decoded as the
    child decodes them."""
    from grader.child import run as child

    places, offset = [], 0
    for blob in case.blobs:
        places.append([offset, len(blob) // 8])
        offset += len(blob)
    # A buffer of its own, as the child reads its request into: an array is given over it.
    tables = bytearray(b"".join(case.blobs))
    return [child._argument(value, places, tables) for value in json.loads(case.args)]


def call(function: Callable[..., Any], case: CaseInput, seconds: float, path: str) -> Raw:
    """Call ``function`` on one case in this thread; a timer interrupts it at ``seconds``.

    The answer is encoded and validated as the child's is, so that every verdict is the
    one `run` gives the same answer.
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
        except MemoryError:
            header, payload = {"kind": "memory"}, b""
        except KeyboardInterrupt:
            if not timer.fired:
                raise  # the learner's own stop: check ends as any cell does
            return Raw(RawKind.TIMEOUT, seconds, stage=Stage.CALL)
        except Exception as exc:  # noqa: BLE001 - the learner's exception is an answer
            header, payload = {"kind": "exception", **child._exception(exc, path)}, b""
    except KeyboardInterrupt:
        # The timer's interrupt, arriving just after the call had returned.
        if not timer.fired:
            raise
        return Raw(RawKind.TIMEOUT, seconds, stage=Stage.CALL)
    taken = time.perf_counter() - began
    # A copy of its bytes, as the child's frame carries them: the function keeps its table.
    data = bytes(memoryview(payload).cast("B")) if len(payload) else b""
    return raw_answer({"seconds": taken, **header}, data, case, taken)


class _Timer:
    """Interrupt the main thread once ``seconds`` have passed, unless disarmed first."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.armed = False
        self.fired = False
        self.thread: threading.Timer | None = None

    def __enter__(self) -> _Timer:
        # Only the main thread can be interrupted: elsewhere the call runs to its end.
        if threading.current_thread() is threading.main_thread():
            self.armed = True
            self.thread = threading.Timer(self.seconds, self._fire)
            self.thread.daemon = True
            self.thread.start()
        return self

    def _fire(self) -> None:
        with self.lock:
            if self.armed:
                self.fired = True
                _thread.interrupt_main()

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.armed = False
        if self.thread is not None:
            self.thread.cancel()
