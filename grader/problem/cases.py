"""Load and validate the problem: visible examples, hidden cases, tolerance, reference."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.errors import WHOLE_FILE, GraderError, Refused
from grader.files import no_bytecode, not_regular
from grader.names import display
from grader.problem import generated
from grader.problem.casefile import (
    MAX_ISSUES_PER_FILE,
    Bad,
    Bads,
    Case,
    Origin,
    kind_of,
    parse_case,
    tolerance_of,
    unknown_keys,
)
from grader.problem.exercise import Exercise
from grader.problem.layout import (
    EXAMPLES_FILE,
    HIDDEN_DIR,
    REFERENCE_FILE,
    is_learner_bundle,
)
from grader.problem.rules import Rules, load_rules
from grader.problem.schema import InputSchema
from grader.problem.yamlsafe import Loaded, Place, cut, line_of, load_file
from grader.records import DEFAULT_ATOL, DEFAULT_RTOL, Tolerance

if TYPE_CHECKING:  # numpy loads in check_expected, once the child has been started
    from grader.compare import Array

# Bounds of the hidden suite, so that `check` takes bounded time and memory on any folder:
# how many case files, bytes and entries of the folder are read, and how many values the
# cases hold in all (a few bytes of YAML, a range or a seed, can stand for millions): 16
# million float64s, 128 MiB, four of the largest cases the first exercise allows.
MAX_CASE_FILES = 200
MAX_SUITE_BYTES = 2 << 20
MAX_SUITE_VALUES = 16_000_000
MAX_FOLDER_ENTRIES = 10 * MAX_CASE_FILES


@dataclass(frozen=True)
class Problem:
    """Everything the grader knows about the exercise, loaded from one folder."""

    root: Path
    rules: Rules  # what the folder's problem/exercise.py declares
    tolerance: Tolerance
    examples: tuple[Case, ...]
    hidden: tuple[Case, ...]
    # Public inputs that `run` also tries, never scored: see the statement's "Public probes".
    probes: tuple[Case, ...] = ()

    @property
    def exercise(self) -> Exercise:
        """Return the function a submission defines, and its arguments."""
        return self.rules.exercise

    @property
    def reference_path(self) -> Path:
        """Return the path of the trusted reference solution."""
        return self.root / REFERENCE_FILE


@dataclass(frozen=True)
class Issue:
    """One thing wrong with the problem files: where, which field, what.

    ``line`` is where the field starts in its YAML file, where it can be found: shown as
    ``file:line:``, which editors and terminals open at that line.
    """

    file: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        # Values in messages are cut already; this bounds any message, the reference's too.
        return f"{where}: {cut(self.field)}: {cut(self.message, 600)}"


def _by_file(issues: list[Issue]) -> list[Issue]:
    """Return the issues grouped by file, files in the order they first come, stable."""
    files = {issue.file: n for n, issue in reversed(list(enumerate(issues)))}
    return sorted(issues, key=lambda i: files[i.file])


class ProblemInvalid(GraderError):
    """The problem files have issues; every one is listed, not just the first."""

    def __init__(self, issues: list[Issue], partial: Problem | None = None) -> None:
        self.issues = issues
        self.partial = partial  # the cases that are valid, for the issues found past them
        count = f"{len(issues)} issue{'s' if len(issues) != 1 else ''}"
        super().__init__(
            f"the problem is invalid ({count}):\n" + "\n".join(f"  {i}" for i in issues)
        )


def _read(path: Path) -> Loaded:
    """Load one YAML file of the problem; Bad, with its field and line, if it cannot be."""
    try:
        loaded = load_file(path)
    except Refused as refused:
        raise Bad(refused.field, str(refused), refused.line) from None
    if loaded.empty:
        raise Bad(WHOLE_FILE, "the file is empty")
    return loaded


def _issue(file: str, bad: Bad, place: Place | None, prefix: str = "") -> Issue:
    """Return one issue of a file, with the line its field starts on, found in the file's
    places as it is read (``prefix``: the field of the case the issue is in)."""
    line = bad.line
    if line is None and place is not None:
        line = line_of(place, f"{prefix}{bad.field}")
    return Issue(file, f"{prefix}{bad.field}", str(bad), line)


def _origin(file: str, field: str, place: Place | None) -> Origin:
    """Return a case's origin: its file and field, and where its keys start."""
    lines = () if place is None else tuple((str(k), n) for k, n in place.lines.items())
    return Origin(file, field, lines)


def _in_order(name: str, found: list[Issue]) -> list[Issue]:
    """Return a file's issues in the order of its lines, as an author reads it, cut past
    the most one file lists."""
    found = sorted(found, key=lambda issue: issue.line or 0)
    if len(found) > MAX_ISSUES_PER_FILE:
        more = Issue(name, WHOLE_FILE, "more issues, not listed: fix these first")
        found = [*found[:MAX_ISSUES_PER_FILE], more]
    return found


EXAMPLES_KEYS = ("tolerance", "examples", "probes")


class Public(Enum):
    """The two lists of public cases in examples.yaml, by their key."""

    EXAMPLES = "examples"  # graded by `run`, with their expected answers
    PROBES = "probes"  # tried by `run` too, never scored


def _examples_file(root: Path) -> tuple[Tolerance, list[Issue], Loaded | None]:
    """Read examples.yaml's top: the tolerance, and its issues; the file, if it reads."""
    base = Tolerance(DEFAULT_RTOL, DEFAULT_ATOL)
    try:
        loaded = _read(root / EXAMPLES_FILE)
    except Bad as bad:
        return base, [_issue(EXAMPLES_FILE, bad, None)], None
    top = loaded.data
    if not isinstance(top, dict):
        message = f"must be a mapping with the keys {', '.join(EXAMPLES_KEYS)}, got {kind_of(top)}"
        return base, [Issue(EXAMPLES_FILE, "(top)", message)], None
    bads = unknown_keys(top, EXAMPLES_KEYS)
    base = tolerance_of(top.get("tolerance"), base, bads)
    examples = top.get("examples")
    if not isinstance(examples, list) or not examples:
        bads.append(Bad("examples", "must be a non-empty list"))
    if not isinstance(top.get("probes") or [], list):
        bads.append(Bad("probes", "must be a list"))
    return base, [_issue(EXAMPLES_FILE, b, loaded.place) for b in bads], loaded


def _public_cases(
    loaded: Loaded | None,
    kind: Public,
    base: Tolerance,
    schema: InputSchema,
    issues: list[Issue],
) -> list[Case]:
    """Validate the examples or probes of examples.yaml; add every issue to ``issues``."""
    top = loaded.data if loaded is not None else None
    raws = top.get(kind.value) if isinstance(top, dict) else None
    if not isinstance(raws, list):
        return []  # said by _examples_file
    place = loaded.place if loaded is not None else None
    listed = place.inner.get(kind.value) if place is not None else None
    cases: list[Case] = []
    for i, raw in enumerate(raws):
        field = f"{kind.value}[{i}]"
        origin = _origin(EXAMPLES_FILE, field, listed.inner.get(i) if listed else None)
        probe = kind is Public.PROBES
        try:
            cases.append(
                parse_case(raw, origin=origin, visible=True, base=base, schema=schema, probe=probe)
            )
        except Bads as bads:
            issues += [_issue(EXAMPLES_FILE, bad, place, f"{field}.") for bad in bads.bads]
    return cases


def case_files(folder: Path) -> tuple[list[Path], list[Issue]]:
    """Return the case files of ``folder``, sorted; or none and one issue, past the bounds.

    Looks at no more than MAX_FOLDER_ENTRIES entries and reads no file: a folder of
    millions of files, or of huge ones, costs no more than a folder at the bounds.
    """
    where = f"{HIDDEN_DIR}/"
    found: list[tuple[Path, int]] = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries, start=1):
                if count > MAX_FOLDER_ENTRIES:
                    message = f"holds more than {MAX_FOLDER_ENTRIES} entries; not read"
                    return [], [Issue(where, "(folder)", message)]
                if entry.name.endswith(".yaml"):
                    info = entry.stat(follow_symlinks=False)
                    size = info.st_size if stat.S_ISREG(info.st_mode) else 0
                    found.append((Path(entry.path), size))
    except OSError as exc:
        return [], [Issue(where, "(folder)", f"cannot be read: {exc.strerror}")]
    if len(found) > MAX_CASE_FILES:
        message = f"holds {len(found)} case files; at most {MAX_CASE_FILES} are read"
        return [], [Issue(where, "(folder)", message)]
    total = sum(size for _, size in found)
    if total > MAX_SUITE_BYTES:
        message = f"its case files hold {total} bytes; at most {MAX_SUITE_BYTES} are read"
        return [], [Issue(where, "(folder)", message)]
    return sorted(path for path, _ in found), []


def _hidden_cases(
    root: Path, base: Tolerance, schema: InputSchema, issues: list[Issue]
) -> list[Case]:
    """Validate every hidden case file; add every issue of every file to ``issues``."""
    hidden_dir = root / HIDDEN_DIR
    files: list[Path] = []
    folder_issues: list[Issue] = []
    if hidden_dir.is_dir():
        files, folder_issues = case_files(hidden_dir)
        issues += folder_issues
    if not files and not folder_issues and not is_learner_bundle(root):
        issues.append(Issue(f"{HIDDEN_DIR}/", "(folder)", "no case files (*.yaml) found"))
    hidden: list[Case] = []
    held = 0
    for path in files:
        if held > MAX_SUITE_VALUES:
            message = f"its cases hold more than {MAX_SUITE_VALUES} values (inputs and answers)"
            issues.append(Issue(f"{HIDDEN_DIR}/", "(folder)", f"{message}; the rest are not read"))
            break
        where = f"{HIDDEN_DIR}/{display(path.name)}"
        found: list[Issue] = []
        place = None
        try:
            loaded = _read(path)
            place = loaded.place
            origin = _origin(where, "", place)
            case = parse_case(loaded.data, origin=origin, visible=False, base=base, schema=schema)
            hidden.append(case)
            held += case.held
        except Bad as bad:
            found.append(_issue(where, bad, None))
        except Bads as bads:
            found += [_issue(where, bad, place) for bad in bads.bads]
        issues += _in_order(where, found)
    return hidden


def load_problem(root: Path) -> Problem:
    """Load and validate examples.yaml and every hidden case file under ``root``.

    Raises ProblemInvalid listing every issue found, every one of every file.
    """
    rules = load_rules(root)
    schema = rules.inputs
    # Tables generated from a seed are kept beside the hidden cases, for the next run.
    with generated.kept_in(root / HIDDEN_DIR / generated.FOLDER):
        base, found, loaded = _examples_file(root)
        examples = _public_cases(loaded, Public.EXAMPLES, base, schema, found)
        probes = _public_cases(loaded, Public.PROBES, base, schema, found)
        issues = _in_order(EXAMPLES_FILE, found)
        hidden = _hidden_cases(root, base, schema, issues)
    seen: dict[str, str] = {}
    for case in examples + probes + hidden:
        if case.name in seen:
            origin = case.origin
            said = f"{case.name!r} is already used by {seen[case.name]}"
            issues.append(Issue(origin.file, origin.of("name"), said, origin.line("name")))
        seen.setdefault(case.name, case.source)
    problem = Problem(
        root=root,
        rules=rules,
        tolerance=base,
        examples=tuple(examples),
        hidden=tuple(hidden),
        probes=tuple(probes),
    )
    if issues:
        raise ProblemInvalid(_by_file(issues), partial=problem)
    return problem


Reference = Callable[..., Any]


def load_reference(problem: Problem) -> Reference:
    """Import the trusted reference solution into the grader's own process."""
    path = problem.reference_path
    spec = importlib.util.spec_from_file_location("_grader_reference", path)
    if spec is None or spec.loader is None or not path.is_file():
        what = "missing"
        if os.path.lexists(path):  # there, but a FIFO, a folder or a link to a device
            what = str(not_regular(os.lstat(path).st_mode))
        raise ProblemInvalid([Issue(str(REFERENCE_FILE), WHOLE_FILE, what)])
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    try:
        with no_bytecode():
            spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken reference is an author's issue to list
        raise ProblemInvalid(
            [Issue(str(REFERENCE_FILE), WHOLE_FILE, f"import failed: {type(exc).__name__}: {exc}")]
        ) from None
    _guard_loaded(problem.root, set(sys.modules) - before)
    function = problem.exercise.function
    func = getattr(module, function, None)
    if not callable(func):
        raise ProblemInvalid([Issue(str(REFERENCE_FILE), function, "not defined")])
    return func  # type: ignore[no-any-return]


def _guard_loaded(root: Path, names: set[str]) -> None:
    """Refuse modules of the problem folder that the reference loaded, if a child could
    read them: the guard before the child started saw only the imports written out."""
    from grader.sandbox.guard import exposed_files

    files = []
    for name in names:
        where = getattr(sys.modules.get(name), "__file__", None)
        if where and Path(os.path.abspath(where)).is_relative_to(root):
            files.append(Path(os.path.abspath(where)))
    exposed = exposed_files(sorted(files)) if files else []
    issues = [Issue(str(e.path.relative_to(root)), WHOLE_FILE, e.why) for e in exposed]
    if issues:
        raise ProblemInvalid(issues)


@dataclass(frozen=True)
class Checked:
    """A problem whose stored expectations agree with the reference, and every case's table."""

    problem: Problem
    expected: dict[str, Array]


def check_problem(root: Path, *, examples: bool = True, hidden: bool = True) -> Checked:
    """Load the problem, run the reference on the chosen cases, and check every stored table.

    Raises ProblemInvalid listing every issue: schema, reference failures, and stored
    expectations outside the tolerance of what the reference computes.
    """
    try:
        problem = load_problem(root)
    except ProblemInvalid as invalid:
        # Every issue of every file at once: the valid cases' stored tables are checked too.
        if invalid.partial is not None:
            try:
                check_expected(invalid.partial, examples=examples, hidden=hidden)
            except ProblemInvalid as wrong:
                issues = _by_file(invalid.issues + wrong.issues)
                # examples.yaml first, as the loader reads it.
                raise ProblemInvalid(
                    sorted(issues, key=lambda i: i.file != EXAMPLES_FILE)
                ) from None
        raise
    return check_expected(problem, examples=examples, hidden=hidden)


def _frozen(table: Array) -> Array:
    table.setflags(write=False)
    return table


def check_expected(problem: Problem, *, examples: bool = True, hidden: bool = True) -> Checked:
    """Run the reference on the chosen cases of a loaded problem; check the stored tables."""
    import numpy as np

    from grader.compare import compare
    from grader.problem.values import arguments

    public = problem.examples + problem.probes
    cases = (public if examples else ()) + (problem.hidden if hidden else ())
    if is_learner_bundle(problem.root) and all(c.expected is not None for c in cases):
        # A learner bundle ships no reference: its examples carry their tables.
        return Checked(
            problem=problem,
            expected={c.name: _frozen(np.array(c.expected, dtype=np.float64)) for c in cases},
        )
    reference = load_reference(problem)
    issues: list[Issue] = []
    expected: dict[str, Array] = {}
    function = (str(REFERENCE_FILE), problem.exercise.function)  # where its issues are
    for case in cases:
        try:
            args = arguments(problem.rules.inputs, case.inputs)
            ref = np.asarray(reference(*args), dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - reported with the case that triggered it
            issues.append(Issue(*function, f"raised {type(exc).__name__} on {case.source}: {exc}"))
            continue
        if ref.shape != case.shape or not np.all(np.isfinite(ref)):
            said = f"returned shape {ref.shape} or non-finite values on {case.source}"
            issues.append(Issue(*function, said))
            continue
        stored = None if case.expected is None else np.array(case.expected, dtype=np.float64)
        if stored is not None:
            m = compare(stored, ref, case.tolerance)
            if m is not None:
                issues.append(
                    Issue(
                        case.origin.file,
                        case.origin.of("expected"),
                        f"disagrees with the reference in {m.wrong} of {m.total} values; "
                        f"row {m.worst_row}, column {m.worst_col}: stored {m.worst_got:.6g}, "
                        f"reference {m.worst_want:.6g} ({case.tolerance.describe()})",
                        case.origin.line("expected"),
                    )
                )
        table = stored if stored is not None else np.array(ref)
        table.setflags(write=False)  # shared by every judgement of a batch: see compare.bound
        expected[case.name] = table
    if issues:
        raise ProblemInvalid(issues)
    return Checked(problem=problem, expected=expected)
