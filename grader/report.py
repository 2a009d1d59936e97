"""Render a Report as text for a terminal or as Gradescope-compatible JSON."""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import TextIO

from grader.files import PROG
from grader.records import LOAD_OUTCOMES, SCHEMA_VERSION, CaseResult, Report
from grader.results import CaseEntry, Results
from grader.stack import versions
from grader.states import Mode

GREEN, RED, YELLOW, DIM, RESET = "\033[32m", "\033[31m", "\033[33m", "\033[2m", "\033[0m"


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _score(x: float) -> str:
    return f"{x:g}"


def limits_line(limits: dict[str, float]) -> str:
    """Return the limits in force, as the header of the text report shows them: only those
    that held (a child without walls has no CPU, memory or file limit)."""
    walled = "cpu_seconds" in limits
    return (
        f"limits: {limits['case_seconds']:g} s per case, "
        f"{limits.get('budget_seconds', 0):g} s per submission, "
        + (
            f"{limits['cpu_seconds']:g} s CPU, {limits['memory_mb']:g} MB memory, "
            f"{limits['file_size_mb']:g} MB files, "
            if walled
            else ""
        )
        + f"{limits['output_bytes']:g} bytes of output kept"
        + ("" if walled else "; no CPU, memory or file limit (no walls)")
    )


def _walls_line(walls: dict[str, str]) -> str:
    """Return how the task and write limits hold, which depends on the backend and machine."""
    return "walls: " + "; ".join(f"{key} {value}" for key, value in walls.items())


def render_text(report: Report, *, colour: bool = False) -> str:
    """Return the report as lines for a terminal: header, one line per case, score last."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if colour else text

    what = "visible examples" if report.mode is Mode.RUN else "hidden cases"
    lines = [
        f"{PROG} {report.mode}: {report.submission} on {len(report.cases)} {what}",
        f"sandbox: {report.backend}; tolerance: {report.tolerance}",
        *([limits_line(report.limits)] if report.limits else []),
        *([_walls_line(report.extra["walls"])] if report.extra.get("walls") else []),
    ]
    lines += [paint(RED, f"warning: {w}") for w in report.warnings]
    lines.append("")
    # A file that cannot be loaded fails every case the same way: say it once.
    shared = {c.message for c in report.cases if c.outcome in LOAD_OUTCOMES}
    if len(shared) == 1 and all(c.outcome in LOAD_OUTCOMES for c in report.cases):
        lines += [paint(RED, line) for line in shared.pop().splitlines()] + [""]
        shown_once = True
    else:
        shown_once = False
    for case in report.cases:
        lines += case_lines(case, colour=colour, brief=shown_once)
    common = _common_diagnosis(report)
    if common is not None:
        lines += ["", paint(YELLOW, f"likely mistake: {common}")]
    if report.output.strip():
        lines += ["", "your file printed:", report.output.rstrip()]
    if report.advice:
        lines.append("")
        lines += [paint(YELLOW, f"passes the examples, but: {note}") for note in report.advice]
    lines += [
        "",
        f"score: {_score(report.score)}/{_score(report.max_score)}"
        + ("  all passed" if report.all_passed else ""),
    ]
    return "\n".join(lines) + "\n"


def case_lines(case: CaseResult, *, colour: bool = False, brief: bool = False) -> list[str]:
    """Return one case's block: PASS or FAIL and its name, then (unless ``brief``) why not."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if colour else text

    mark = paint(GREEN, "PASS") if case.passed else paint(RED, "FAIL")
    # Timing is the submission's to choose: shown on visible examples only.
    timing = f" {paint(DIM, f'({case.seconds * 1000:.0f} ms)')}" if case.visible else ""
    lines = [f"{mark} {case.name}{timing}"]
    if brief or case.passed:
        return lines
    lines += ["     " + line for line in case.message.splitlines()]
    if case.diagnosis is not None:
        lines.append("     " + paint(YELLOW, f"hint: {case.diagnosis.hint}"))
        if case.diagnosis.measured:
            lines.append("     " + f"read back: {case.diagnosis.measured}")
    for detail in case.details:
        lines += ["     " + line for line in detail.splitlines()]
    return lines


def _number(x: float) -> float | str:
    """Return x, or its name where JSON has no number for it (inf, nan)."""
    return x if math.isfinite(x) else str(x)


def _common_diagnosis(report: Report) -> str | None:
    """Return the hint shared by most failing cases, if a majority of them has one."""
    failing = [c for c in report.cases if not c.passed]
    # Counted by code: the hint of one code is one sentence, whatever was read on each case.
    codes = Counter(c.diagnosis.code for c in failing if c.diagnosis is not None)
    if not codes:
        return None
    code, count = codes.most_common(1)[0]
    hint = next(c.diagnosis.hint for c in failing if c.diagnosis and c.diagnosis.code == code)
    return hint if 2 * count > len(failing) else None


def _test(case: CaseResult) -> CaseEntry:
    output = case.message
    if case.diagnosis is not None:
        output += f"\nhint: {case.diagnosis.hint}"
        if case.diagnosis.measured:
            output += f"\nread back: {case.diagnosis.measured}"
    if case.details:
        output += "\n" + "\n".join(case.details)
    m = case.mismatch
    return CaseEntry(
        name=case.name,
        passed=case.passed,
        score=case.score,
        max_score=case.max_score,
        output=output,
        outcome=case.outcome,
        seconds=round(case.seconds, 4) if case.visible else None,
        diagnosis=None if case.diagnosis is None else case.diagnosis.code,
        mismatch=None
        if m is None
        else {
            "wrong": m.wrong,
            "total": m.total,
            "max_abs_error": _number(m.max_abs_error),
            "max_rel_error": _number(m.max_rel_error),
            "worst_row": m.worst_row,
            "worst_col": m.worst_col,
        },
    )


def execution_time(report: Report) -> float:
    """Return the grading's duration: in whole seconds after hidden cases, which it could time."""
    return round(report.seconds, 3) if report.mode is Mode.RUN else float(round(report.seconds))


def to_results(report: Report) -> Results:
    """Return the report as the results document (grader.results)."""
    return Results(
        score=report.score,
        max_score=report.max_score,
        execution_time=execution_time(report),
        output=render_text(report),
        tests=tuple(_test(c) for c in report.cases),
        extra={
            **report.extra,  # first, so that none of it can stand in for the keys below
            "schema_version": SCHEMA_VERSION,
            "mode": report.mode.value,
            "submission": report.submission,
            "sandbox": report.backend,
            "stack": versions(),
            "tolerance": report.tolerance,
            "limits": report.limits,
            "warnings": list(report.warnings),
            "diagnoses": sorted({c.diagnosis.code for c in report.cases if c.diagnosis}),
            # The public probes run with the visible examples only.
            **({"advice": list(report.advice)} if report.mode is Mode.RUN else {}),
        },
    )


def render_json(report: Report) -> str:
    """Return the results document as text."""
    return to_results(report).dumps()
