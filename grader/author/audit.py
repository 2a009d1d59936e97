"""Author tools: grade the solution corpus on the hidden suite and measure its strength."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader.compare import Array
from grader.errors import GraderError, Refused
from grader.pipeline import answer, describe_backend, start
from grader.problem.casefile import Case
from grader.problem.cases import Checked, check_problem
from grader.problem.layout import CORPUS_FILE, REFERENCE_FILE, protected_paths
from grader.problem.yamlsafe import load_file
from grader.records import Outcome
from grader.sandbox.answers import NOT_ANSWERED, RawKind
from grader.sandbox.capacity import usable_cpus
from grader.sandbox.guard import guard
from grader.sandbox.limits import Limits
from grader.sandbox.spawn import Direct
from grader.sandbox.walls import Choice
from grader.states import Word
from grader.submission.source import read_submission


class Meant(Word):
    """What a variant of the corpus is meant to be: its folder in solutions/."""

    CORRECT = "correct"
    WRONG = "wrong"


@dataclass(frozen=True)
class Variant:
    """One known solution of the corpus: its path and whether it is meant to be correct."""

    name: str
    path: Path

    @property
    def kind(self) -> Meant:
        """Return what the variant is meant to be, from the folder the file lives in."""
        return Meant(self.name.split("/", 1)[0])


def load_corpus(root: Path) -> tuple[Variant, ...]:
    """Return the corpus listed in solutions/corpus.yaml, checked against the files present."""
    path = root / CORPUS_FILE
    if not path.exists() and not path.is_symlink():
        raise GraderError(f"{CORPUS_FILE}: missing; the audit needs a corpus")
    try:
        # Through the bounded loader, as every problem file: no FIFO, link or alias bomb.
        listed = load_file(path).data
    except Refused as exc:
        where = f"{CORPUS_FILE}:{exc.line}" if exc.line else CORPUS_FILE
        raise GraderError(f"{where}: {exc}") from None
    if not isinstance(listed, dict):
        raise GraderError(f"{CORPUS_FILE}: must map correct/NAME and wrong/NAME to verdicts")
    present = {
        f"{kind}/{p.stem}" for kind in Meant for p in (root / "solutions" / kind).glob("*.py")
    }
    for name in sorted(set(listed) ^ present):
        where = "listed but has no file" if name in listed else "has a file but is not listed"
        raise GraderError(f"{CORPUS_FILE}: {name}: {where}")
    variants = tuple(Variant(n, root / "solutions" / f"{n}.py") for n in sorted(listed))
    if not any(v.kind is Meant.WRONG for v in variants):
        raise GraderError(f"{CORPUS_FILE}: lists no wrong variant, so nothing can be audited")
    return variants


@dataclass(frozen=True)
class Cell:
    """One variant on one case: its outcome, and its error as a multiple of the tolerance."""

    outcome: Outcome
    ratio: float | None  # max |got - want| / (atol + rtol |want|); None without a table
    max_abs: float | None


@dataclass(frozen=True)
class Row:
    """One variant across the hidden suite."""

    variant: Variant
    cells: tuple[Cell, ...]
    backend: str

    @property
    def caught_by(self) -> tuple[int, ...]:
        """Return the indices of the cases this variant fails."""
        return tuple(i for i, c in enumerate(self.cells) if c.outcome is not Outcome.PASSED)


@dataclass(frozen=True)
class Audit:
    """The kill matrix of a hidden suite against the corpus, and what it means."""

    cases: tuple[Case, ...]
    rows: tuple[Row, ...]
    backend: str

    @property
    def correct(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.variant.kind is Meant.CORRECT)

    @property
    def wrong(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.variant.kind is Meant.WRONG)

    @property
    def failing_correct(self) -> tuple[Row, ...]:
        """Return the correct variants that fail some case: the suite or tolerance is off."""
        return tuple(r for r in self.correct if r.caught_by)

    @property
    def survivors(self) -> tuple[Row, ...]:
        """Return the wrong variants that no hidden case catches."""
        return tuple(r for r in self.wrong if not r.caught_by)

    def catches(self, case: int) -> tuple[str, ...]:
        """Return the wrong variants a case catches."""
        return tuple(r.variant.name for r in self.wrong if case in r.caught_by)

    def sole_catches(self, case: int) -> tuple[str, ...]:
        """Return the wrong variants that only this case catches."""
        return tuple(r.variant.name for r in self.wrong if r.caught_by == (case,))

    @property
    def redundant(self) -> tuple[int, ...]:
        """Return the cases that catch nothing alone: removing one loses no variant."""
        return tuple(i for i in range(len(self.cases)) if not self.sole_catches(i))

    @property
    def clean(self) -> bool:
        """Return True when every correct variant passes and every wrong one is caught."""
        return not self.failing_correct and not self.survivors

    def margin(self, case: int) -> tuple[Cell | None, str, Cell | None, str]:
        """Return the worst correct cell and the closest caught wrong cell of a case."""
        worst: tuple[Cell | None, str] = (None, "")
        closest: tuple[Cell | None, str] = (None, "")
        for row in self.rows:
            cell = row.cells[case]
            if cell.ratio is None:
                continue
            if row.variant.kind is Meant.CORRECT:
                if worst[0] is None or cell.ratio > (worst[0].ratio or 0.0):
                    worst = (cell, row.variant.name)
            elif cell.outcome is not Outcome.PASSED and (
                closest[0] is None or cell.ratio < (closest[0].ratio or math.inf)
            ):
                closest = (cell, row.variant.name)
        return worst[0], worst[1], closest[0], closest[1]


def _row(variant: Variant, checked: Checked, limits: Limits, choice: Choice) -> Row:
    """Grade one variant as `grader submit` would, and measure how far each answer is."""
    problem = checked.problem
    src = read_submission(variant.path, function=problem.exercise.function)
    cases = problem.hidden
    with start(src, Direct(choice, limits), limits, problem.exercise) as session:
        answered = answer(session, src, cases, checked, problem.rules)
    # A file whose static check failed ran nothing: it names no walls.
    ran = answered.static.outcome is None
    cells = []
    for i, verdict in enumerate(answered.of(cases)):
        want = checked.expected[cases[i].name]
        raw = answered.run.results.get(i, NOT_ANSWERED)
        ratio, max_abs = _distance(raw.array if raw.kind is RawKind.OK else None, want, cases[i])
        cells.append(Cell(verdict.outcome, ratio, max_abs))
    return Row(variant, tuple(cells), describe_backend(answered.run) if ran else "")


def _distance(got: Array | None, want: Array, case: Case) -> tuple[float | None, float | None]:
    """Return how many tolerances off, and how far, the worst element of a table is."""
    if got is None or got.shape != want.shape:
        return None, None
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(got - want)
        # An exact value is no tolerance off, even where the tolerance is 0 (exact answers).
        scaled = np.where(
            err == 0, 0.0, err / (case.tolerance.atol + case.tolerance.rtol * np.abs(want))
        )
    if not np.all(np.isfinite(err)):
        return math.inf, math.inf
    return float(scaled.max()), float(err.max())


def audit(*, problem_root: Path, limits: Limits, choice: Choice, jobs: int = 0) -> Audit:
    """Grade every corpus variant on the hidden suite, ``jobs`` children at a time."""
    checked = check_problem(problem_root, examples=False)
    guard(protected_paths(problem_root), choice.backend)
    variants = load_corpus(problem_root)
    workers = jobs or usable_cpus()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = tuple(pool.map(lambda v: _row(v, checked, limits, choice), variants))
    backend = next((row.backend for row in rows if row.backend), "none ran")
    return Audit(cases=checked.problem.hidden, rows=rows, backend=backend)


@dataclass(frozen=True)
class Failure:
    """A hidden case that the reference or a correct variant fails, and how."""

    case: Case
    variant: str
    outcome: Outcome

    def __str__(self) -> str:
        if self.outcome is Outcome.PASSED:
            return f"{self.variant} is listed in known_failing, but passes it now"
        return f"{self.variant} fails it ({self.outcome.value})"


def vet(*, problem_root: Path, limits: Limits, choice: Choice, jobs: int = 0) -> list[Failure]:
    """Grade the reference and every file of solutions/correct/ on every hidden case, in
    the sandbox as audit does; return each failure a case does not record as known.

    The reference computing the expected tables in this process proves nothing about a
    case (a position of 10^20 overflows the same way there); run as a submission, through
    the same walls and checks as a learner's file, it and the correct variants must pass.
    A case kept with `add-case --force` lists the variants it fails in ``known_failing``.
    """
    checked = check_problem(problem_root, examples=False)
    guard(protected_paths(problem_root), choice.backend)
    folder = problem_root / "solutions"
    variants = [Variant("reference", problem_root / REFERENCE_FILE)]
    variants += [Variant(f"correct/{p.stem}", p) for p in sorted((folder / "correct").glob("*.py"))]
    with ThreadPoolExecutor(max_workers=jobs or usable_cpus()) as pool:
        rows = list(pool.map(lambda v: _row(v, checked, limits, choice), variants))
    failures = []
    for i, case in enumerate(checked.problem.hidden):
        known = {variant for variant, _ in case.known_failing}
        failed = {row.variant.name: row.cells[i].outcome for row in rows if i in row.caught_by}
        failures += [Failure(case, v, how) for v, how in failed.items() if v not in known]
        # Exactly those: a listed variant that passes now hides nothing, and misleads.
        failures += [Failure(case, v, Outcome.PASSED) for v in sorted(known - set(failed))]
    return failures


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


def render_audit(report: Audit) -> str:
    """Return the audit as text: the kill matrix, survivors, redundancy, margins."""
    n = len(report.cases)
    width = max(len(r.variant.name) for r in report.rows) + 2
    head = "".join(f"{i + 1:>3}" for i in range(n))
    lines = [
        f"grader audit: {len(report.correct)} correct and {len(report.wrong)} wrong variants "
        f"on {n} hidden cases (sandbox: {report.backend})",
        "",
        "kill matrix (x: the case catches the variant; for correct variants, x is a failure)",
        " " * width + head,
    ]
    for row in report.rows:
        marks = "".join(f"{'x' if i in row.caught_by else '.':>3}" for i in range(n))
        lines.append(f"{row.variant.name:<{width}}{marks}")
    lines += ["", "cases:"]
    for i, case in enumerate(report.cases):
        alone = report.sole_catches(i)
        lines.append(
            f"{i + 1:>3} {case.name:<20} catches {len(report.catches(i)):>2}"
            + (f", alone: {', '.join(alone)}" if alone else ", nothing alone")
        )
    lines.append("")
    failing = report.failing_correct
    lines.append(
        "correct variants: all pass"
        if not failing
        else "correct variants FAILING: " + ", ".join(r.variant.name for r in failing)
    )
    survivors = report.survivors
    lines.append(
        "survivors: none"
        if not survivors
        else "survivors (no hidden case catches them): "
        + ", ".join(r.variant.name for r in survivors)
    )
    redundant = report.redundant
    lines.append(
        "redundant cases (catch nothing alone): "
        + (", ".join(report.cases[i].name for i in redundant) if redundant else "none")
    )
    lines += [
        "",
        "tolerance margins: error as a multiple of the tolerance (<= 1 passes)",
        f"{'case':<20} {'rtol/atol':<14} {'worst correct (max abs)':<42} closest caught wrong",
    ]
    for i, case in enumerate(report.cases):
        worst, wname, closest, cname = report.margin(i)
        left = f"{_fmt(worst.ratio)} ({wname}, {_fmt(worst.max_abs)})" if worst else "-"
        right = f"{_fmt(closest.ratio)} ({cname}, {_fmt(closest.max_abs)})" if closest else "-"
        tol = f"{case.tolerance.rtol:g}/{case.tolerance.atol:g}"
        lines.append(f"{case.name:<20} {tol:<14} {left:<42} {right}")
    lines += ["", "audit: clean" if report.clean else "audit: FAILED"]
    return "\n".join(lines) + "\n"


def audit_json(report: Audit) -> dict[str, Any]:
    """Return the audit as one JSON-ready document."""

    def num(x: float | None) -> float | str | None:
        return x if x is None or math.isfinite(x) else str(x)

    return {
        "schema_version": 1,
        "sandbox": report.backend,
        "clean": report.clean,
        "cases": [c.name for c in report.cases],
        "variants": [
            {
                "name": r.variant.name,
                "kind": r.variant.kind.value,
                "caught_by": [report.cases[i].name for i in r.caught_by],
                "outcomes": [c.outcome.value for c in r.cells],
            }
            for r in report.rows
        ],
        "failing_correct": [r.variant.name for r in report.failing_correct],
        "survivors": [r.variant.name for r in report.survivors],
        "redundant": [report.cases[i].name for i in report.redundant],
        "margins": [
            {
                "case": case.name,
                "rtol": case.tolerance.rtol,
                "atol": case.tolerance.atol,
                "worst_correct": {"variant": wn, "ratio": num(w.ratio), "max_abs": num(w.max_abs)}
                if w
                else None,
                "closest_wrong": {"variant": cn, "ratio": num(c.ratio), "max_abs": num(c.max_abs)}
                if c
                else None,
            }
            for i, case in enumerate(report.cases)
            for w, wn, c, cn in [report.margin(i)]
        ],
    }
