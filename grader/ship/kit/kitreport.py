"""What `check` returns: one grading in the kernel, as text (the blocks `run` prints) and
as HTML for a notebook's cell, with the cells outside the tolerance marked."""

from __future__ import annotations

import dis
import html
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from grader.compare import close_mask
from grader.records import CaseResult, Outcome, Report, Tolerance
from grader.report import case_lines, render_text

# Tables larger than this are shown as text only: a cell's HTML costs more than its value.
MAX_HTML_CELLS = 2000
# What the course's grader offers a submission, besides the standard library.
OFFERED = frozenset({"numpy"})
# Said where a call ran past the limit: what check's interrupt cannot do, unlike `run`'s kill.
UNSTOPPABLE = (
    "check stops a call as the Interrupt button does: one blocked in C code (a long numpy "
    "operation, a sleep with Ctrl-C ignored) runs on until it returns, and is then reported "
    "as a timeout with the time it took; the kit's `run` stops any call at the limit"
)


class KitReport:
    """One `check`, scored as `run` scores: ``passed`` when every visible example passes.
    The public probes are shown beside them and never scored ("probes are never scored",
    says the statement); a failing one is named as `run` names it, under the score."""

    def __init__(
        self,
        report: Report,
        *,
        probes: Sequence[CaseResult],
        tolerances: Sequence[Tolerance],
        modules: Sequence[str],
    ) -> None:
        self.report = report
        self.probes = tuple(probes)
        self.tolerances = tuple(tolerances)
        self.modules = tuple(modules)

    @property
    def passed(self) -> bool:
        """Whether every visible example passed, as `run` decides (probes are not scored)."""
        return self.report.all_passed

    @property
    def cases(self) -> tuple[CaseResult, ...]:
        """Return every case shown: the visible examples, then the public probes."""
        return (*self.report.cases, *self.probes)

    def headline(self) -> list[str]:
        """Return the lines said before the cases: where it ran, and what to keep in mind."""
        lines = [
            f"check: {self.report.submission} ran in this kernel, without walls, on "
            f"{_count(len(self.report.cases), 'visible example')} (scored) and "
            f"{_count(len(self.probes), 'public probe')} (shown, not scored)",
        ]
        if self.modules:
            lines.append(
                f"it uses {', '.join(self.modules)}: the course's grader offers the standard "
                "library and numpy only"
            )
        if any(case.outcome is Outcome.TIMEOUT for case in self.cases):
            lines.append(UNSTOPPABLE)
        lines.append(
            "a notebook you hand in is graded cell by cell, in order: run it from the top "
            "before handing it in"
        )
        return lines

    def __str__(self) -> str:
        # `run`'s blocks, under this headline instead of `run`'s (its sandbox and limits),
        # then the probes' own blocks.
        text = render_text(self.report).partition("\n\n")[2]
        lines = [*self.headline(), "", text.rstrip("\n")]
        if self.probes:
            lines += ["", "public probes (shown, not scored):"]
            lines += [line for case in self.probes for line in case_lines(case)]
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        verdict = "passed" if self.passed else "failed"
        parts = [f'<div class="grader-check grader-{verdict}">']
        parts += [f"<p>{html.escape(line)}</p>" for line in self.headline()]
        examples = len(self.report.cases)
        for i, (case, tol) in enumerate(zip(self.cases, self.tolerances, strict=False)):
            if i == examples:
                parts.append("<p><i>public probes (shown, not scored):</i></p>")
            parts += list(_case_html(case, tol))
        passed = sum(case.passed for case in self.report.cases)
        parts.append(f"<p><b>{passed}/{examples} visible examples passed</b></p>")
        parts += [f"<p>passes the examples, but: {html.escape(a)}</p>" for a in self.report.advice]
        parts.append("</div>")
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


# The most code objects modules_used reads: a notebook's helpers are a few dozen.
MAX_CODES = 500


def modules_used(function: Callable[..., Any]) -> list[str]:
    """Return the modules beyond the standard library and numpy that ``function`` uses:
    named through its globals or imported in its body, in its own code, the code nested in
    it and the helper functions it calls from the same notebook or module."""
    try:
        code = getattr(function, "__code__", None)
        scope = getattr(function, "__globals__", {})
    except Exception:  # noqa: BLE001 - the learner's object may raise on any attribute
        return []
    if not isinstance(code, types.CodeType) or not isinstance(scope, dict):
        return []
    found: set[str] = set()
    stack, seen = [code], {code}
    while stack and len(seen) <= MAX_CODES:
        current = stack.pop()
        nested = [c for c in current.co_consts if isinstance(c, types.CodeType)]
        for name in current.co_names:
            value = scope.get(name)
            found.add(_top_module(value))
            # A helper defined beside it (a notebook's cell, the same module): read too.
            if isinstance(value, types.FunctionType) and value.__globals__ is scope:
                nested.append(value.__code__)
        found |= {top for top in _imported(current)}
        stack += [c for c in nested if c not in seen]
        seen.update(nested)
    found -= {"", "__main__", "builtins", "__mp_main__"}
    return sorted(m for m in found if m not in sys.stdlib_module_names and m not in OFFERED)


def _imported(code: types.CodeType) -> Iterator[str]:
    """Yield the top packages that ``code`` imports itself (`import torch` in a body)."""
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME" and isinstance(instruction.argval, str):
            yield instruction.argval.partition(".")[0]


def _top_module(value: object) -> str:
    """Return the top package ``value`` comes from ('' where it says none, or will not)."""
    try:
        if isinstance(value, types.ModuleType):
            name = value.__name__
        else:
            name = getattr(value, "__module__", "")
    except Exception:  # noqa: BLE001 - a global of the learner's may raise on any attribute
        return ""
    return name.partition(".")[0] if isinstance(name, str) else ""
