"""What `check` returns: one grading in the kernel, as text (the blocks `run` prints) and
as HTML for a notebook's cell, with the cells outside the tolerance marked."""

from __future__ import annotations

import html
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from grader.compare import close_mask
from grader.records import CaseResult, Report, Tolerance
from grader.report import render_text

# Tables larger than this are shown as text only: a cell's HTML costs more than its value.
MAX_HTML_CELLS = 2000
# What the course's grader offers a submission, besides the standard library.
OFFERED = frozenset({"numpy"})


class KitReport:
    """One `check`: ``passed`` when every visible example and public probe passes."""

    def __init__(
        self,
        report: Report,
        *,
        probes: Sequence[CaseResult],
        tolerances: Sequence[Tolerance],
        modules: Sequence[str],
    ) -> None:
        self.report = replace(report, cases=(*report.cases, *probes), advice=())
        self.examples = len(report.cases)
        self.tolerances = tuple(tolerances)
        self.modules = tuple(modules)

    @property
    def passed(self) -> bool:
        """Whether every visible example and public probe passed."""
        return all(case.passed for case in self.report.cases)

    def headline(self) -> list[str]:
        """Return the lines said before the cases: where it ran, and what to keep in mind."""
        probes = len(self.report.cases) - self.examples
        lines = [
            f"check: {self.report.submission} ran in this kernel, without walls, on "
            f"{_count(self.examples, 'visible example')} and {_count(probes, 'public probe')}",
        ]
        if self.modules:
            lines.append(
                f"it uses {', '.join(self.modules)}: the course's grader offers the standard "
                "library and numpy only"
            )
        lines.append(
            "a notebook you hand in is graded cell by cell, in order: run it from the top "
            "before handing it in"
        )
        return lines

    def __str__(self) -> str:
        # `run`'s blocks, under this headline instead of `run`'s (its sandbox and limits).
        text = render_text(self.report)
        return "\n".join([*self.headline(), "", text.partition("\n\n")[2]])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        verdict = "passed" if self.passed else "failed"
        parts = [f'<div class="grader-check grader-{verdict}">']
        parts += [f"<p>{html.escape(line)}</p>" for line in self.headline()]
        for case, tol in zip(self.report.cases, self.tolerances, strict=False):
            parts += list(_case_html(case, tol))
        passed = sum(case.passed for case in self.report.cases)
        parts.append(f"<p><b>{passed}/{len(self.report.cases)} passed</b></p></div>")
        return "\n".join(parts)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _case_html(case: CaseResult, tol: Tolerance) -> Iterator[str]:
    mark = "PASS" if case.passed else "FAIL"
    colour = "#1a7f37" if case.passed else "#cf222e"
    yield f'<h4 style="color:{colour}">{mark} {html.escape(case.name)}</h4>'
    if case.passed:
        return
    lines = [case.message, *(f"hint: {case.diagnosis.hint}" for _ in [0] if case.diagnosis)]
    lines += list(case.details)
    yield f"<pre>{html.escape(chr(10).join(lines))}</pre>"
    got, want = case.got, case.want
    if got is None or want is None or got.shape != want.shape or got.size > MAX_HTML_CELLS:
        return
    ok = close_mask(got, want, tol)
    rows = got.reshape(1, -1) if got.ndim == 1 else got.reshape(got.shape[0], -1)
    wanted = want.reshape(rows.shape)
    good = ok.reshape(rows.shape)
    yield "<p>got (cells outside the tolerance marked; hover for the expected value):</p>"
    yield '<table style="border-collapse:collapse;font-family:monospace">'
    for row, want_row, ok_row in zip(rows, wanted, good, strict=True):
        cells = "".join(
            f'<td title="expected {w:.6g}" style="padding:2px 6px;'
            + ("" if fine else "background:#ffd7d5;font-weight:bold")
            + f'">{g:.6g}</td>'
            for g, w, fine in zip(row, want_row, ok_row, strict=True)
        )
        yield f"<tr>{cells}</tr>"
    yield "</table>"


def modules_used(function: Callable[..., Any]) -> list[str]:
    """Return the modules beyond the standard library and numpy that ``function`` names
    (through its globals, in its own code and the code nested in it)."""
    code = getattr(function, "__code__", None)
    scope = getattr(function, "__globals__", {})
    if code is None:
        return []
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        stack += [c for c in current.co_consts if isinstance(c, types.CodeType)]
        for name in current.co_names:
            value = scope.get(name)
            if isinstance(value, types.ModuleType):
                top = value.__name__.partition(".")[0]
            else:
                top = str(getattr(value, "__module__", "") or "").partition(".")[0]
            if top and top not in sys.stdlib_module_names and top not in OFFERED:
                found.add(top)
    found -= {"__main__", "builtins", "__mp_main__"}
    return sorted(found)
