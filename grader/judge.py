"""Turn what the child answered for one case into a verdict with a learner-facing message.

Everything the submission controls (messages, type names, printed text, exact error values)
is shown for visible examples only. On a hidden case the message is built from fixed
sentences, names that occur in the submitted source, and coarse numbers, so that a
submission cannot carry a hidden case's data out through the report.
"""

from __future__ import annotations

import errno
import math
import signal

import numpy as np

from grader.cases import Case
from grader.compare import Array, compare
from grader.diagnose import diagnose
from grader.layout import FUNCTION_NAME
from grader.records import LOAD_OUTCOMES, CaseResult, Diagnosis, Mismatch, Outcome
from grader.sandbox import Kind, Raw, signal_name
from grader.source import Source

# Outcomes whose report already holds the tables, or where they would not help.
_SHOWN_ALREADY = frozenset({Outcome.PASSED, Outcome.WRONG_ANSWER} | LOAD_OUTCOMES)


def column_name(col: int) -> str:
    """Return e.g. 'pair 3 cos' for column 7."""
    return f"pair {col // 2} {'sin' if col % 2 == 0 else 'cos'}"


def fmt_table(values: Array, limit: int = 12) -> str:
    """Return a compact, bounded rendering of a table, 6 significant digits per value."""
    return np.array2string(
        values,
        threshold=limit * limit,
        edgeitems=3,
        max_line_width=100,
        formatter={"float_kind": lambda x: f"{x:10.6g}"},
    )


def magnitude(x: float) -> str:
    """Return an error to one significant digit, e.g. '~0.002', for hidden-case reports."""
    if not math.isfinite(x):
        return "NaN or infinite"
    return f"~{x:.1g}"


def _shape_message(got: tuple[int, ...], want: tuple[int, int], visible: bool) -> str:
    """Say which axis is off, and the likely cause, without numbers on hidden cases."""
    if len(got) != 2:
        cause = (
            "a flat vector: build a 2-D table, one row per position"
            if len(got) == 1
            else f"{len(got)}-dimensional: the answer is a 2-D table"
        )
        head = f"shape {got}, expected {want}: " if visible else "your result is "
        return head + cause
    rows, cols = got
    if (rows, cols) == (want[1], want[0]):
        cause = "looks transposed: rows must be positions and columns the d_model features"
    elif rows != want[0] and cols == want[1]:
        cause = (
            "wrong number of rows: there must be one row per entry of positions, repeats included"
        )
    elif cols != want[1] and rows == want[0]:
        cause = "wrong number of columns: there must be exactly d_model columns"
    else:
        cause = "both the number of rows and of columns are wrong"
    return (f"shape {got}, expected {want}: " if visible else "") + cause


def _exception_message(info: dict[str, object], src: Source, visible: bool, when: str) -> str:
    exc = src.cites(info.get("exc_type")) or "an exception"
    line = src.line(info.get("line"))
    where = f" at line {line} of {src.name}" if line else ""
    if not visible:
        return f"{when} raised {exc}{where}"
    text = f"{when} raised {info.get('exc_type')}: {info.get('message', '')}{where}"
    frames = info.get("frames")
    if isinstance(frames, list) and frames:
        text += "\n" + "\n".join(
            f"  line {f.get('line')}, in {f.get('function')}: {f.get('text', '')}"
            for f in frames
            if isinstance(f, dict)
        )
    return text


def load_failure(raw: Raw, src: Source, visible: bool) -> tuple[Outcome, str]:
    """Return the outcome and message for a file that could not be loaded at all."""
    info = raw.info
    kind = info.get("kind")
    if kind == "syntax":
        # Reported by the compiler before any of the file ran: safe on hidden cases too.
        line = src.line(info.get("line"))
        return Outcome.SYNTAX_ERROR, (
            f"{src.name} has a syntax error"
            + (f" at line {line}" if line else "")
            + f": {info.get('message', '')}"
            + (f"\n    {info.get('text', '')}" if info.get("text") else "")
        )
    if kind == "missing_function":
        raw_defined = info.get("defined")
        names = [n for n in (raw_defined if isinstance(raw_defined, list) else []) if src.cites(n)]
        also = f"; it defines {', '.join(names)}" if names else "; it defines no functions"
        return Outcome.MISSING_FUNCTION, f"{src.name} has no function named {FUNCTION_NAME}{also}"
    if kind == "not_callable":
        return Outcome.MISSING_FUNCTION, f"{FUNCTION_NAME} in {src.name} is not a function"
    if kind == "bad_signature":
        sig = f" (yours is {FUNCTION_NAME}{info.get('signature')})" if visible else ""
        return Outcome.BAD_SIGNATURE, (
            f"{FUNCTION_NAME} must accept two arguments, positions and d_model{sig}"
        )
    if kind == "memory":
        return Outcome.MEMORY_LIMIT, f"importing {src.name} ran out of memory"
    return Outcome.IMPORT_ERROR, _exception_message(info, src, visible, f"importing {src.name}")


def judge(
    case: Case, raw: Raw, want: Array | None, src: Source, *, limits_text: dict[str, str]
) -> CaseResult:
    """Return the verdict on one case from the child's raw answer and the expected table."""
    visible = case.visible
    details: list[str] = []
    if visible:
        details.append(f"input: positions={list(case.positions)}, d_model={case.d_model}")
    mismatch: Mismatch | None = None
    diagnosis: Diagnosis | None = None
    if raw.kind is Kind.LOAD_ERROR:
        outcome, message = load_failure(raw, src, visible)
        details = []
    elif raw.kind is Kind.EXCEPTION:
        outcome = Outcome.EXCEPTION
        message = _exception_message(raw.info, src, visible, FUNCTION_NAME)
        if raw.info.get("errno") == errno.EFBIG:
            # Python ignores SIGXFSZ, so the file-size limit surfaces as this error.
            message += f"\n(it wrote a file larger than the limit of {limits_text['file']})"
    elif raw.kind is Kind.MEMORY:
        outcome = Outcome.MEMORY_LIMIT
        message = f"ran out of memory (limit {limits_text['memory']})"
    elif raw.kind is Kind.TIMEOUT:
        outcome = Outcome.TIMEOUT
        if raw.info.get("phase") == "import":
            message = f"importing {src.name} took longer than {limits_text['startup']}"
        else:
            message = f"took longer than the time limit of {limits_text['case']}"
    elif raw.kind is Kind.CRASH:
        outcome = Outcome.CRASH
        message = _crash_message(raw.info, src, visible, limits_text)
    elif raw.kind is Kind.BAD_VALUE:
        outcome = Outcome.BAD_VALUE
        message = _bad_value_message(raw.info, src, visible)
    else:
        assert raw.array is not None and want is not None
        got = raw.array
        if got.shape != want.shape:
            outcome = Outcome.WRONG_SHAPE
            message = _shape_message(got.shape, (want.shape[0], want.shape[1]), visible)
            diagnosis = diagnose(case.positions, case.d_model, got, want)
        else:
            mismatch = compare(got, want, case.tolerance)
            if mismatch is None:
                outcome, message = Outcome.PASSED, "passed"
            else:
                outcome = Outcome.WRONG_ANSWER
                message, more = _mismatch_message(case, mismatch, got, want)
                details += more
                diagnosis = diagnose(case.positions, case.d_model, got, want)
    if visible and want is not None and outcome not in _SHOWN_ALREADY:
        # Show the expected table wherever the mismatch report has not already done so.
        if raw.array is not None:
            details.append("got:\n" + fmt_table(raw.array))
        details.append("expected:\n" + fmt_table(want))
    return CaseResult(
        name=case.name,
        visible=visible,
        outcome=outcome,
        message=message,
        score=case.max_score if outcome is Outcome.PASSED else 0.0,
        max_score=case.max_score,
        seconds=raw.seconds,
        why=case.why if visible else "",
        mismatch=mismatch if visible else None,
        details=tuple(details) if visible else (),
        diagnosis=diagnosis,
        positions=case.positions if visible else (),
        got=raw.array if visible else None,
        want=want if visible else None,
    )


def _mismatch_message(case: Case, m: Mismatch, got: Array, want: Array) -> tuple[str, list[str]]:
    share = 100.0 * m.share
    if not case.visible:
        # Coarse figures only: exact counts and errors would let a submission signal data.
        return (
            f"wrong values: about {max(round(share), 1)}% of the table is outside the "
            f"tolerance; largest error {magnitude(m.max_abs_error)} at row {m.worst_row}, "
            f"column {m.worst_col} ({column_name(m.worst_col)})",
            [],
        )
    where = (
        f"row {m.worst_row} (position {case.positions[m.worst_row]}), "
        f"column {m.worst_col} ({column_name(m.worst_col)})"
    )
    message = (
        f"wrong values: {m.wrong} of {m.total} ({share:.1f}%) outside the tolerance; "
        f"max abs error {m.max_abs_error:.3g}, max rel error {m.max_rel_error:.3g}"
    )
    details = [
        f"worst at {where}: expected {m.worst_want:.6g}, got {m.worst_got:.6g}",
        "expected:\n" + fmt_table(want),
        "got:\n" + fmt_table(got),
    ]
    if m.non_finite:
        details.append(f"{m.non_finite} value(s) are NaN or infinite")
    return message, details


def _crash_message(
    info: dict[str, object], src: Source, visible: bool, limits: dict[str, str]
) -> str:
    rc = info.get("returncode")
    phase = "while being imported" if info.get("phase") == "import" else "during the call"
    state = str(info.get("state", ""))
    if state.startswith("protocol"):
        return (
            f"the grader could not read the result {phase}: something in {src.name} "
            "wrote to the grader's channel or replaced its code"
        )
    if rc == -signal.SIGXCPU:
        return f"used more CPU time than the limit of {limits['cpu']} {phase}"
    if rc == -signal.SIGXFSZ:
        return f"wrote a file larger than the limit of {limits['file']} {phase}"
    if isinstance(rc, int) and rc < 0:
        return f"the process was killed by {signal_name(rc)} {phase}"
    # The exit status is the submission's choice: on a hidden case it could carry data out.
    status = f" (exit status {rc})" if visible else ""
    return f"the process exited {phase}{status} before returning a result"


def _bad_value_message(info: dict[str, object], src: Source, visible: bool) -> str:
    reason = info.get("reason")
    if reason == "none":
        return "returned None: is a `return` statement missing?"
    if reason == "ragged":
        return "returned rows of different lengths: every row must have d_model values"
    if reason == "complex":
        return "returned complex numbers: the table must hold real floats"
    if reason == "too_large":
        return "returned far more values than the table can hold"
    kind = src.cites(info.get("type")) or "a value"
    shown = f" ({info.get('type')})" if visible else f" ({kind})"
    return f"returned something that is not a table of numbers{shown}"
