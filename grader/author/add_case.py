"""Author tools: add a hidden case file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from grader.errors import GraderError, Refused
from grader.problem.casefile import NAME_RE, Case, validate_input
from grader.problem.cases import Issue, load_problem
from grader.problem.layout import HIDDEN_DIR, STATEMENT_FILE, statement_text
from grader.sandbox.conversation import compact_positions
from grader.sandbox.limits import Limits
from grader.sandbox.walls import Choice


def new_case_report(
    root: Path, path: Path, *, limits: Limits, choice: Choice
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Audit the suite with the new case in it; say what it catches, and list the correct
    variants that fail it, each with its outcome (a case they fail is wrong, not strict)."""
    from grader.author.audit import audit

    try:
        result = audit(problem_root=root, limits=limits, choice=choice)
    except GraderError as exc:
        return f"not audited: {exc}\n", ()
    index = next(i for i, c in enumerate(result.cases) if c.source.endswith(path.name))
    caught = result.catches(index)
    alone = result.sole_catches(index)
    lines = [
        f"catches {len(caught)} of {len(result.wrong)} wrong variants"
        + (f": {', '.join(caught)}" if caught else ""),
        f"catches alone: {', '.join(alone)}"
        if alone
        else "redundant: every variant it catches is caught by another case too",
    ]
    failing = tuple(
        (r.variant.name, r.cells[index].outcome.value)
        for r in result.failing_correct
        if index in r.caught_by
    )
    return "\n".join(lines) + "\n", failing


def record_known_failing(path: Path, failing: Sequence[tuple[str, str]]) -> None:
    """Write into a case kept with --force which correct variants fail it, and how: `check`
    then accepts exactly those, and the next author sees why the case is as it is."""
    entries = [
        {"variant": name, "why": f"{outcome} on this case; kept with add-case --force"}
        for name, outcome in failing
    ]
    block = yaml.safe_dump({"known_failing": entries}, sort_keys=False, width=100)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)


def same_inputs(cases: Sequence[Case]) -> list[Issue]:
    """Return an issue for each case whose input is an earlier case's, naming that case.

    Two names for one input test nothing twice over: one of them is a case that was meant
    to be different and is not.
    """
    first: dict[tuple[tuple[int, ...], int], Case] = {}
    issues = []
    for case in cases:
        key = (tuple(case.positions), case.d_model)
        if key in first:
            issues.append(Issue(case.source, "input", f"is the input of {first[key].source} too"))
        else:
            first[key] = case
    return issues


def suite_issues(root: Path, *, limits: Limits, choice: Choice) -> list[Issue]:
    """Return what makes the hidden suite unfit to ship: a repeated input, or a case that
    the reference or a correct variant fails when graded as a submission."""
    from grader.author.audit import vet

    hidden = load_problem(root).hidden
    issues = same_inputs(hidden)
    for failure in vet(problem_root=root, limits=limits, choice=choice):
        issues.append(
            Issue(
                failure.case.source,
                "(case)",
                f"{failure}; a case correct code fails is wrong, not strict "
                "(fix it, or keep it with `grader add-case --force`, which records it)",
            )
        )
    return issues


COUNT_IN_STATEMENT = re.compile(r"graded on (\d+) hidden cases?")


def statement_issue(root: Path, hidden: int) -> str:
    """Return what is wrong with the statement's case count, or "" when it is true."""
    try:
        text = statement_text(root)
    except Refused as refused:
        return str(refused)
    if text is None:
        return ""
    said = {int(n) for n in COUNT_IN_STATEMENT.findall(text)}
    if said and said != {hidden}:
        return (
            f"says it is graded on {', '.join(map(str, sorted(said)))} hidden cases; "
            f"there are {hidden} (grader add-case keeps this number true)"
        )
    return ""


def update_statement(root: Path) -> None:
    """Make the statement's "graded on N hidden cases" count the case files there are."""
    path = root / STATEMENT_FILE
    try:
        text = statement_text(root)
    except Refused as refused:
        raise GraderError(f"{STATEMENT_FILE}: {refused}") from None
    if text is None:
        return  # a problem folder without a statement has no count to keep true
    count = len(list((root / HIDDEN_DIR).glob("*.yaml")))
    words = f"graded on {count} hidden case{'s' if count != 1 else ''}"
    updated = COUNT_IN_STATEMENT.sub(words, text)
    if updated != text:
        path.write_text(updated, encoding="utf-8")


def add_case(root: Path, *, positions: list[int], d_model: int, name: str | None, why: str) -> Path:
    """Validate a new hidden case and write it as the next numbered file; return its path."""
    problem = load_problem(root)
    try:
        # Before anything is written: its count is updated once the case is.
        statement_text(root)
    except Refused as refused:
        raise GraderError(f"{STATEMENT_FILE}: {refused}; no case written") from None
    try:
        validate_input(positions, d_model)
    except ValueError as exc:
        raise GraderError(f"invalid case: {exc}") from None
    folder = root / HIDDEN_DIR
    numbers = [
        int(m.group(1)) for p in folder.glob("*.yaml") if (m := re.match(r"^(\d+)_", p.name))
    ]
    number = max(numbers, default=0) + 1
    if name is None:
        name = f"case_{number:02d}"
    if not name.strip():
        raise GraderError("--name must not be empty (leave it out for the next case_NN)")
    if not NAME_RE.match(name):
        raise GraderError(f"invalid case name {name!r}: use lowercase letters, digits, _ or -")
    every = problem.examples + problem.probes + problem.hidden
    taken = {c.name: c.source for c in every}
    if name in taken:
        raise GraderError(f"a case named {name!r} already exists ({taken[name]})")
    same = next(
        (c for c in every if c.d_model == d_model and tuple(c.positions) == tuple(positions)),
        None,
    )
    if same is not None:
        raise GraderError(
            f"this input is the input of {same.source} already ({same.name}); a case must "
            "test something no other case does"
        )
    if not why.strip():
        raise GraderError("--why must say what mistake the case catches")
    path = folder / f"{number:02d}_{name}.yaml"
    document = {
        "name": name,
        "why": why.strip(),
        # A run like 0:4096 is written as its range, as an author would write it by hand.
        "input": {"positions": compact_positions(positions), "d_model": d_model},
    }
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100)
    try:
        # "x" refuses to overwrite, even if another process wrote the file meanwhile.
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise GraderError(f"{path.name} already exists; not overwritten") from None
    return path
