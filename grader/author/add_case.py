"""Author tools: add a hidden case file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from grader.errors import GraderError, Refused
from grader.problem.casefile import NAME_RE, Case
from grader.problem.cases import Issue, load_problem
from grader.problem.layout import HIDDEN_DIR, STATEMENT_FILE, statement_text
from grader.problem.schema import Inputs, InputSchema, InvalidInputs, check_inputs
from grader.problem.values import written
from grader.problem.yamlsafe import unknown_key
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
    first: dict[Inputs, Case] = {}
    issues = []
    for case in cases:
        key = case.inputs
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


def given_inputs(schema: InputSchema, pairs: Sequence[str], file: Path | None) -> dict[str, object]:
    """Return the inputs an author gave: ``NAME=VALUE`` pairs (each in its field's short
    form, or YAML), over those of a YAML file of ``name: value`` lines."""
    raw: dict[str, object] = {}
    if file is not None:
        from grader.problem.yamlsafe import load_file

        try:
            data = load_file(file, what="an inputs file").data
        except Refused as refused:
            raise GraderError(f"{file}: {refused}") from None
        if not isinstance(data, dict):
            raise GraderError(f"{file}: must be a mapping of {', '.join(schema.names)}")
        raw |= {str(k): v for k, v in data.items()}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep:
            raise GraderError(f"--input {pair!r}: give NAME=VALUE, NAME one of {schema.names}")
        if name not in schema.names:
            raise GraderError(f"--input {name}: {unknown_key(name, schema.names)}")
        try:
            raw[name] = schema.field(name).from_text(text)
        except ValueError as exc:
            raise GraderError(f"invalid case: {exc}") from None
    return raw


def _checked(inputs: dict[str, object], schema: InputSchema) -> Inputs:
    """Return the given inputs checked against the exercise's declaration; GraderError
    naming every field that is unknown, missing or wrong."""
    unknown = [k for k in inputs if k not in schema.names]
    missing = [k for k in schema.names if k not in inputs]
    if unknown or missing:
        said = [unknown_key(k, schema.names) for k in unknown] + [
            f"{k} is missing (give --input {k}=VALUE)" for k in missing
        ]
        raise GraderError(f"invalid case: {'; '.join(said)}")
    try:
        return check_inputs(inputs, schema)
    except InvalidInputs as exc:
        # Each problem names its field where its sentence does not already (x.seed).
        said = [
            str(p) if not p.field or str(p).startswith(p.field) else f"{p.field}: {p}"
            for p in exc.problems
        ]
        raise GraderError(f"invalid case: {'; '.join(said)}") from None


def add_case(root: Path, *, inputs: dict[str, object], name: str | None, why: str) -> Path:
    """Validate a new hidden case and write it as the next numbered file; return its path."""
    problem = load_problem(root)
    schema = problem.rules.inputs
    try:
        # Before anything is written: its count is updated once the case is.
        statement_text(root)
    except Refused as refused:
        raise GraderError(f"{STATEMENT_FILE}: {refused}; no case written") from None
    checked = _checked(inputs, schema)
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
    same = next((c for c in every if c.inputs == checked), None)
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
        # A run like 0:4096 is written as its range, a generated table as its seed, as an
        # author would write them by hand.
        "input": written(schema, inputs),
    }
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100)
    try:
        # "x" refuses to overwrite, even if another process wrote the file meanwhile.
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise GraderError(f"{path.name} already exists; not overwritten") from None
    return path
