"""Load and validate the problem: visible examples, hidden cases, tolerance, reference."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from grader.errors import GraderError
from grader.layout import (
    EXAMPLES_FILE,
    FUNCTION_NAME,
    HIDDEN_DIR,
    REFERENCE_FILE,
    is_learner_bundle,
)
from grader.records import DEFAULT_ATOL, DEFAULT_RTOL, Tolerance

if TYPE_CHECKING:  # numpy loads in check_expected, once the child has been started
    from grader.compare import Array

# libyaml's loader where the machine has it: the same safe subset, five times faster.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Bounds that keep one case cheap to grade; the statement itself sets no upper limit.
MAX_ROWS = 200_000
MAX_D_MODEL = 8192
MAX_ELEMENTS = 4_000_000
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


@dataclass(frozen=True)
class Case:
    """One graded call: its inputs, where it came from, and how it is checked."""

    name: str
    why: str
    positions: tuple[int, ...]
    d_model: int
    tolerance: Tolerance
    visible: bool
    source: str
    expected: tuple[tuple[float, ...], ...] | None = None
    max_score: float = 1.0
    # Correct variants known to fail this case, with why: kept with `add-case --force`.
    known_failing: tuple[tuple[str, str], ...] = ()

    @property
    def shape(self) -> tuple[int, int]:
        """Return the shape a correct answer has."""
        return (len(self.positions), self.d_model)


@dataclass(frozen=True)
class Problem:
    """Everything the grader knows about the exercise, loaded from one folder."""

    root: Path
    tolerance: Tolerance
    examples: tuple[Case, ...]
    hidden: tuple[Case, ...]
    # Public inputs that `run` also tries, never scored: see the statement's "Public probes".
    probes: tuple[Case, ...] = ()

    @property
    def reference_path(self) -> Path:
        """Return the path of the trusted reference solution."""
        return self.root / REFERENCE_FILE


def validate_input(positions: object, d_model: object) -> tuple[tuple[int, ...], int]:
    """Check inputs against the statement's requirements; return them normalised.

    Raises ValueError with a sentence that names the offending value.
    """
    if isinstance(d_model, bool) or not isinstance(d_model, int):
        raise ValueError(f"d_model must be an integer, got {d_model!r}")
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be an even integer >= 2, got {d_model}")
    if d_model > MAX_D_MODEL:
        raise ValueError(f"d_model must be at most {MAX_D_MODEL}, got {d_model}")
    if not isinstance(positions, list | tuple | range):
        raise ValueError(f"positions must be a list of integers, got {type(positions).__name__}")
    if len(positions) == 0:
        raise ValueError("positions must hold at least one position")
    if len(positions) > MAX_ROWS:
        raise ValueError(f"at most {MAX_ROWS} positions per case, got {len(positions)}")
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int):
            raise ValueError(f"positions must be integers, got {p!r}")
        if p < 0:
            raise ValueError(f"positions must be >= 0, got {p}")
    if len(positions) * d_model > MAX_ELEMENTS:
        raise ValueError(
            f"a case may hold at most {MAX_ELEMENTS} values; "
            f"{len(positions)} x {d_model} is too many"
        )
    return tuple(positions), d_model


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
        return f"{where}: {self.field}: {self.message}"


# One step of a dotted field: a key ("input") or an index ("[2]").
_FIELD_STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _line_of(node: yaml.Node, field: str) -> int | None:
    """Return the line where ``field`` (say "examples[0].input.positions") starts in ``node``.

    As far as the field exists: a key that is missing points at the mapping that lacks it.
    """
    if field.startswith("("):  # "(file)", "(top)": the whole file
        return None
    line = node.start_mark.line + 1
    for index, key in _FIELD_STEP.findall(field):
        if index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
            node = node.value[int(index)]
            line = node.start_mark.line + 1
        elif key and isinstance(node, yaml.MappingNode):
            found = [
                (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key
            ]
            if not found:
                break
            name, node = found[0]
            line = name.start_mark.line + 1
        else:
            break
    return line


def _with_lines(root: Path, issues: list[Issue]) -> list[Issue]:
    """Add the line of each issue's field in its YAML file; only when there are issues."""
    trees: dict[str, yaml.Node | None] = {}
    located = []
    for issue in issues:
        if issue.file.endswith(".yaml"):
            if issue.file not in trees:
                try:
                    text = (root / issue.file).read_text(encoding="utf-8")
                    trees[issue.file] = yaml.compose(text, Loader=SAFE_LOADER)
                except (OSError, UnicodeDecodeError, yaml.YAMLError):
                    trees[issue.file] = None
            tree = trees[issue.file]
            if tree is not None:
                issue = replace(issue, line=_line_of(tree, issue.field))
        located.append(issue)
    return located


class ProblemInvalid(GraderError):
    """The problem files have issues; every one is listed, not just the first."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        count = f"{len(issues)} issue{'s' if len(issues) != 1 else ''}"
        super().__init__(
            f"the problem is invalid ({count}):\n" + "\n".join(f"  {i}" for i in issues)
        )


def _table(raw: object, shape: tuple[int, int]) -> tuple[tuple[float, ...], ...]:
    """Validate a stored table: rows of finite numbers, in the shape the input needs."""
    if not isinstance(raw, list) or not all(isinstance(row, list) for row in raw):
        raise _Bad("expected", "must be a table: a list of rows, each a list of numbers")
    rows = []
    for row in raw:
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in row):
            raise _Bad("expected", "must hold numbers only")
        rows.append(tuple(float(v) for v in row))
    found = (len(rows), len(rows[0]) if rows else 0)
    if found != shape or any(len(row) != shape[1] for row in rows):
        raise _Bad("expected", f"has shape {found}, but the input needs {shape}")
    if not all(math.isfinite(v) for row in rows for v in row):
        raise _Bad("expected", "holds NaN or infinity")
    return tuple(rows)


class _Bad(Exception):
    """A field of one case file is wrong; carries the field's dotted name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def compact_positions(positions: Sequence[int]) -> list[int] | dict[str, list[int]]:
    """Return the positions as a list, or as ``{range: [start, stop(, step)]}`` when they
    are one: the form a case file may use, which _expand_positions turns back into the very
    same positions."""
    if len(positions) > 2 and (step := positions[1] - positions[0]):
        stop = positions[-1] + (1 if step > 0 else -1)
        if tuple(positions) == tuple(range(positions[0], stop, step)):
            return {"range": [positions[0], stop] if step == 1 else [positions[0], stop, step]}
    return list(positions)


def _expand_positions(raw: object) -> object:
    """Turn ``{range: [start, stop, step]}`` into a range; leave lists as they are."""
    if not isinstance(raw, dict):
        return raw
    if set(raw) != {"range"}:
        raise _Bad("input.positions", "a generator must be {range: [start, stop, step]}")
    args = raw["range"]
    if (
        not isinstance(args, list)
        or not 1 <= len(args) <= 3
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in args)
        or (len(args) == 3 and args[2] == 0)
    ):
        raise _Bad("input.positions.range", f"needs 1 to 3 integers, step not 0; got {args!r}")
    return range(*args)


def _number(value: object) -> float | None:
    """Return a YAML value as a number, or None; "1e-3" counts.

    YAML 1.1 reads 1e-3 (no dot) as a string, and authors write tolerances that way.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _tolerance(raw: object, base: Tolerance) -> Tolerance:
    if raw is None:
        return base
    if not isinstance(raw, dict) or not set(raw) <= {"rtol", "atol"}:
        raise _Bad("tolerance", f"takes only rtol and atol, got {raw!r}")
    values: dict[str, float] = {"rtol": base.rtol, "atol": base.atol}
    for key, value in raw.items():
        number = _number(value)
        if number is None or not 0 <= number < 1:
            raise _Bad(f"tolerance.{key}", f"must be a number in [0, 1), got {value!r}")
        values[key] = number
    return Tolerance(**values)


CASE_KEYS = frozenset(
    {"name", "why", "input", "expected", "tolerance", "max_score", "known_failing"}
)


class _Bads(Exception):
    """Everything wrong with one case, each with its field."""

    def __init__(self, bads: list[_Bad]) -> None:
        super().__init__("; ".join(str(b) for b in bads))
        self.bads = bads


def _case(raw: object, *, where: str, visible: bool, base: Tolerance, probe: bool = False) -> Case:
    """Validate one case; raise _Bads listing every field that is wrong, not the first."""
    if not isinstance(raw, dict):
        raise _Bads([_Bad("(top)", f"a case must be a mapping, got {type(raw).__name__}")])
    bads = [
        _Bad(key, f"unknown key (allowed: {', '.join(sorted(CASE_KEYS))})")
        for key in sorted(set(raw) - CASE_KEYS, key=str)
    ]
    bads += [_Bad(key, "missing key") for key in ("name", "why", "input") if key not in raw]
    name, why = raw.get("name"), raw.get("why")
    if "name" in raw and (not isinstance(name, str) or not NAME_RE.match(name)):
        bads.append(_Bad("name", f"must be lowercase letters, digits, _ or -, got {name!r}"))
    if "why" in raw and (not isinstance(why, str) or not why.strip()):
        bads.append(_Bad("why", "must be a non-empty sentence"))
    positions: tuple[int, ...] = ()
    d_model = 0
    inp = raw.get("input")
    if "input" in raw and (not isinstance(inp, dict) or set(inp) != {"positions", "d_model"}):
        bads.append(_Bad("input", "must have exactly the keys positions and d_model"))
    elif isinstance(inp, dict):
        try:
            positions, d_model = validate_input(_expand_positions(inp["positions"]), inp["d_model"])
        except _Bad as bad:
            bads.append(bad)
        except ValueError as exc:
            field = "input.d_model" if "d_model" in str(exc) else "input.positions"
            bads.append(_Bad(field, str(exc)))
    expected = None
    if raw.get("expected") is not None:
        if positions:
            try:
                expected = _table(raw["expected"], (len(positions), d_model))
            except _Bad as bad:
                bads.append(bad)
    elif visible and not probe:
        bads.append(_Bad("expected", "a visible example must list its expected values"))
    max_score = raw.get("max_score", 1.0)
    if isinstance(max_score, bool) or not isinstance(max_score, int | float) or max_score <= 0:
        bads.append(_Bad("max_score", f"must be a positive number, got {max_score!r}"))
        max_score = 1.0
    tolerance = base
    try:
        tolerance = _tolerance(raw.get("tolerance"), base)
    except _Bad as bad:
        bads.append(bad)
    known = _known_failing(raw.get("known_failing", []), bads)
    if bads:
        raise _Bads(bads)
    assert isinstance(name, str) and isinstance(why, str)
    return Case(
        name=name,
        why=why.strip(),
        positions=positions,
        d_model=d_model,
        tolerance=tolerance,
        visible=visible,
        source=where,
        expected=expected,
        max_score=float(max_score),
        known_failing=known,
    )


def _known_failing(raw: object, bads: list[_Bad]) -> tuple[tuple[str, str], ...]:
    """Read ``known_failing``: a list of {variant, why} (see `grader add-case --force`)."""
    entries = raw if isinstance(raw, list) else None
    if entries is None or not all(
        isinstance(e, dict)
        and set(e) == {"variant", "why"}
        and all(isinstance(v, str) and 0 < len(v) <= 200 for v in e.values())
        for e in entries
    ):
        bads.append(_Bad("known_failing", "must be a list of {variant: NAME, why: SENTENCE}"))
        return ()
    return tuple((str(e["variant"]), str(e["why"])) for e in entries)


def _read_yaml(path: Path) -> object:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except OSError as exc:
        raise _Bad("(file)", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise _Bad("(file)", f"not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise _Bad("(file)", _yaml_message(exc)) from None


def _yaml_message(exc: yaml.YAMLError) -> str:
    """Say where YAML stopped and why: 'not valid YAML at line 3, column 7: <cause>'."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    cause = " ".join(
        str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None)) if part
    )
    return f"not valid YAML{where}: {cause or str(exc).splitlines()[0]}"


def load_problem(root: Path) -> Problem:
    """Load and validate examples.yaml and every hidden case file under ``root``.

    Raises ProblemInvalid listing every issue found, one or more per file.
    """
    issues: list[Issue] = []
    base = Tolerance(DEFAULT_RTOL, DEFAULT_ATOL)
    examples: list[Case] = []
    try:
        top = _read_yaml(root / EXAMPLES_FILE)
        if not isinstance(top, dict) or not set(top) <= {"tolerance", "examples", "probes"}:
            raise _Bad("(top)", "must be a mapping with the keys tolerance, examples, probes")
        base = _tolerance(top.get("tolerance"), base)
        raw_examples = top.get("examples")
        if not isinstance(raw_examples, list) or not raw_examples:
            raise _Bad("examples", "must be a non-empty list")
        raw_probes = top.get("probes") or []
        if not isinstance(raw_probes, list):
            raise _Bad("probes", "must be a list")
    except _Bad as bad:
        issues.append(Issue(EXAMPLES_FILE, bad.field, str(bad)))
        raw_examples, raw_probes = [], []
    for i, raw in enumerate(raw_examples):
        where = f"{EXAMPLES_FILE}: examples[{i}]"
        try:
            examples.append(_case(raw, where=where, visible=True, base=base))
        except _Bads as bads:
            issues += [
                Issue(EXAMPLES_FILE, f"examples[{i}].{bad.field}", str(bad)) for bad in bads.bads
            ]
    probes: list[Case] = []
    for i, raw in enumerate(raw_probes):
        where = f"{EXAMPLES_FILE}: probes[{i}]"
        try:
            probes.append(_case(raw, where=where, visible=True, base=base, probe=True))
        except _Bads as bads:
            issues += [
                Issue(EXAMPLES_FILE, f"probes[{i}].{bad.field}", str(bad)) for bad in bads.bads
            ]
    hidden: list[Case] = []
    hidden_dir = root / HIDDEN_DIR
    files = sorted(hidden_dir.glob("*.yaml")) if hidden_dir.is_dir() else []
    if not files and not is_learner_bundle(root):
        issues.append(Issue(f"{HIDDEN_DIR}/", "(folder)", "no case files (*.yaml) found"))
    for path in files:
        where = f"{HIDDEN_DIR}/{path.name}"
        try:
            hidden.append(_case(_read_yaml(path), where=where, visible=False, base=base))
        except _Bad as bad:
            issues.append(Issue(where, bad.field, str(bad)))
        except _Bads as bads:
            issues += [Issue(where, bad.field, str(bad)) for bad in bads.bads]
    seen: dict[str, str] = {}
    for case in examples + probes + hidden:
        if case.name in seen:
            file, prefix = _where(case)
            issues.append(
                Issue(file, f"{prefix}name", f"{case.name!r} is already used by {seen[case.name]}")
            )
        seen.setdefault(case.name, case.source)
    if issues:
        raise ProblemInvalid(_with_lines(root, issues))
    return Problem(
        root=root,
        tolerance=base,
        examples=tuple(examples),
        hidden=tuple(hidden),
        probes=tuple(probes),
    )


Reference = Callable[[list[int], int], Any]


def load_reference(problem: Problem) -> Reference:
    """Import the trusted reference solution into the grader's own process."""
    path = problem.reference_path
    spec = importlib.util.spec_from_file_location("_grader_reference", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ProblemInvalid([Issue(str(REFERENCE_FILE), "(file)", "missing")])
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    # No bytecode beside the reference: a __pycache__ there is the problem's, not ours to fill.
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken reference is an author's issue to list
        raise ProblemInvalid(
            [Issue(str(REFERENCE_FILE), "(file)", f"import failed: {type(exc).__name__}: {exc}")]
        ) from None
    finally:
        sys.dont_write_bytecode = writes
    _guard_loaded(problem.root, set(sys.modules) - before)
    func = getattr(module, FUNCTION_NAME, None)
    if not callable(func):
        raise ProblemInvalid([Issue(str(REFERENCE_FILE), FUNCTION_NAME, "not defined")])
    return func  # type: ignore[no-any-return]


def _guard_loaded(root: Path, names: set[str]) -> None:
    """Refuse modules of the problem folder that the reference loaded, if a child could
    read them: the guard before the child started saw only the imports written out."""
    from grader.walls import exposed_files

    files = []
    for name in names:
        where = getattr(sys.modules.get(name), "__file__", None)
        if where and Path(os.path.abspath(where)).is_relative_to(root):
            files.append(Path(os.path.abspath(where)))
    issues = [
        Issue(str(e.path.relative_to(root)), "(file)", e.why) for e in exposed_files(sorted(files))
    ]
    if issues:
        raise ProblemInvalid(issues)


@dataclass(frozen=True)
class Checked:
    """A problem whose stored expectations agree with the reference, and every case's table."""

    problem: Problem
    expected: dict[str, Array]


def _where(case: Case) -> tuple[str, str]:
    """Return (file, field prefix) of a case, e.g. ("examples.yaml", "examples[0].")."""
    file, _, item = case.source.partition(": ")
    return file, f"{item}." if item else ""


def check_problem(root: Path, *, examples: bool = True, hidden: bool = True) -> Checked:
    """Load the problem, run the reference on the chosen cases, and check every stored table.

    Raises ProblemInvalid listing every issue: schema, reference failures, and stored
    expectations outside the tolerance of what the reference computes.
    """
    return check_expected(load_problem(root), examples=examples, hidden=hidden)


def _frozen(table: Array) -> Array:
    table.setflags(write=False)
    return table


def check_expected(problem: Problem, *, examples: bool = True, hidden: bool = True) -> Checked:
    """Run the reference on the chosen cases of a loaded problem; check the stored tables."""
    import numpy as np

    from grader.compare import compare

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
    for case in cases:
        file, prefix = _where(case)
        try:
            ref = np.asarray(reference(list(case.positions), case.d_model), dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - reported with the case that triggered it
            issues.append(
                Issue(
                    str(REFERENCE_FILE),
                    FUNCTION_NAME,
                    f"raised {type(exc).__name__} on {case.source}: {exc}",
                )
            )
            continue
        if ref.shape != case.shape or not np.all(np.isfinite(ref)):
            issues.append(
                Issue(
                    str(REFERENCE_FILE),
                    FUNCTION_NAME,
                    f"returned shape {ref.shape} or non-finite values on {case.source}",
                )
            )
            continue
        stored = None if case.expected is None else np.array(case.expected, dtype=np.float64)
        if stored is not None:
            m = compare(stored, ref, case.tolerance)
            if m is not None:
                issues.append(
                    Issue(
                        file,
                        f"{prefix}expected",
                        f"disagrees with the reference in {m.wrong} of {m.total} values; "
                        f"row {m.worst_row}, column {m.worst_col}: stored {m.worst_got:.6g}, "
                        f"reference {m.worst_want:.6g} ({case.tolerance.describe()})",
                    )
                )
        table = stored if stored is not None else np.array(ref)
        table.setflags(write=False)  # shared by every judgement of a batch: see compare.bound
        expected[case.name] = table
    if issues:
        raise ProblemInvalid(_with_lines(problem.root, issues))
    return Checked(problem=problem, expected=expected)
