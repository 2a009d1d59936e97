"""Load and validate the problem: visible examples, hidden cases, tolerance, reference."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from grader.compare import DEFAULT_ATOL, DEFAULT_RTOL, Array, Tolerance
from grader.errors import GraderError

FUNCTION_NAME = "sinusoidal_positions"
EXAMPLES_FILE = "examples.yaml"
HIDDEN_DIR = "hidden_tests"
REFERENCE_FILE = Path("solutions") / "reference.py"
PROBLEM_ENV = "GRADER_PROBLEM"
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
    expected: Array | None = None
    max_score: float = 1.0

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

    @property
    def reference_path(self) -> Path:
        """Return the path of the trusted reference solution."""
        return self.root / REFERENCE_FILE


def find_problem_root(explicit: str | None) -> Path:
    """Return the problem folder: ``--problem``, then $GRADER_PROBLEM, then the source tree."""
    if explicit is not None:
        return _checked_root(Path(explicit), "from --problem")
    env = os.environ.get(PROBLEM_ENV)
    if env:
        return _checked_root(Path(env), f"from ${PROBLEM_ENV}")
    # An editable install (the README's) leaves the package inside the repository.
    here = Path(__file__).resolve().parent.parent
    if (here / EXAMPLES_FILE).is_file():
        return here
    raise GraderError(
        f"cannot find the problem folder (no {EXAMPLES_FILE} next to the grader package); "
        f"pass --problem DIR or set ${PROBLEM_ENV}"
    )


def _checked_root(path: Path, origin: str) -> Path:
    if not (path / EXAMPLES_FILE).is_file():
        raise GraderError(f"problem folder {str(path)!r} {origin} has no {EXAMPLES_FILE}")
    return path.resolve()


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


def _expand_positions(raw: object, where: str) -> object:
    """Turn ``{range: [start, stop, step]}`` into a range; leave lists as they are."""
    if not isinstance(raw, dict):
        return raw
    if set(raw) != {"range"}:
        raise GraderError(f"{where}: positions generator must be {{range: [start, stop, step]}}")
    args = raw["range"]
    if (
        not isinstance(args, list)
        or not 1 <= len(args) <= 3
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in args)
        or (len(args) == 3 and args[2] == 0)
    ):
        raise GraderError(f"{where}: range needs 1 to 3 integers and a non-zero step, got {args!r}")
    return range(*args)


def _tolerance(raw: object, base: Tolerance, where: str) -> Tolerance:
    if raw is None:
        return base
    if not isinstance(raw, dict) or not set(raw) <= {"rtol", "atol"}:
        raise GraderError(f"{where}: tolerance takes only rtol and atol, got {raw!r}")
    values: dict[str, float] = {"rtol": base.rtol, "atol": base.atol}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise GraderError(f"{where}: tolerance.{key} must be a number in [0, 1), got {value!r}")
        values[key] = float(value)
    return Tolerance(**values)


def _case(raw: object, *, where: str, visible: bool, base: Tolerance) -> Case:
    if not isinstance(raw, dict):
        raise GraderError(f"{where}: a case must be a mapping, got {type(raw).__name__}")
    allowed = {"name", "why", "input", "expected", "tolerance", "max_score"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise GraderError(f"{where}: unknown key {unknown[0]!r} (allowed: {sorted(allowed)})")
    for key in ("name", "why", "input"):
        if key not in raw:
            raise GraderError(f"{where}: missing key {key!r}")
    name, why = raw["name"], raw["why"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise GraderError(f"{where}: name must be lowercase letters, digits, _ or -, got {name!r}")
    if not isinstance(why, str) or not why.strip():
        raise GraderError(f"{where}: why must be a non-empty sentence")
    inp = raw["input"]
    if not isinstance(inp, dict) or set(inp) != {"positions", "d_model"}:
        raise GraderError(f"{where}: input must have exactly positions and d_model")
    try:
        positions, d_model = validate_input(
            _expand_positions(inp["positions"], where), inp["d_model"]
        )
    except ValueError as exc:
        raise GraderError(f"{where}: input: {exc}") from None
    expected = None
    if raw.get("expected") is not None:
        try:
            expected = np.array(raw["expected"], dtype=np.float64)
        except (TypeError, ValueError):
            raise GraderError(f"{where}: expected must be a table of numbers") from None
        if expected.shape != (len(positions), d_model):
            raise GraderError(
                f"{where}: expected has shape {expected.shape}, "
                f"but the input needs {(len(positions), d_model)}"
            )
    max_score = raw.get("max_score", 1.0)
    if isinstance(max_score, bool) or not isinstance(max_score, int | float) or max_score <= 0:
        raise GraderError(f"{where}: max_score must be a positive number, got {max_score!r}")
    return Case(
        name=name,
        why=why.strip(),
        positions=positions,
        d_model=d_model,
        tolerance=_tolerance(raw.get("tolerance"), base, where),
        visible=visible,
        source=where,
        expected=expected,
        max_score=float(max_score),
    )


def _read_yaml(path: Path, where: str) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GraderError(f"{where}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise GraderError(f"{where}: not valid YAML: {exc}".splitlines()[0]) from None


def load_problem(root: Path) -> Problem:
    """Load and validate examples.yaml and every hidden case file under ``root``."""
    top = _read_yaml(root / EXAMPLES_FILE, EXAMPLES_FILE)
    if not isinstance(top, dict) or not set(top) <= {"tolerance", "examples"}:
        raise GraderError(f"{EXAMPLES_FILE}: must be a mapping with tolerance and examples")
    base = _tolerance(top.get("tolerance"), Tolerance(DEFAULT_RTOL, DEFAULT_ATOL), EXAMPLES_FILE)
    raw_examples = top.get("examples")
    if not isinstance(raw_examples, list) or not raw_examples:
        raise GraderError(f"{EXAMPLES_FILE}: examples must be a non-empty list")
    examples = tuple(
        _case(raw, where=f"{EXAMPLES_FILE}: examples[{i}]", visible=True, base=base)
        for i, raw in enumerate(raw_examples)
    )
    for case in examples:
        if case.expected is None:
            raise GraderError(f"{case.source}: a visible example must list its expected values")
    hidden_dir = root / HIDDEN_DIR
    files = sorted(hidden_dir.glob("*.yaml")) if hidden_dir.is_dir() else []
    if not files:
        raise GraderError(f"{HIDDEN_DIR}/: no case files (*.yaml) found")
    hidden = tuple(
        _case(
            _read_yaml(path, f"{HIDDEN_DIR}/{path.name}"),
            where=f"{HIDDEN_DIR}/{path.name}",
            visible=False,
            base=base,
        )
        for path in files
    )
    seen: dict[str, str] = {}
    for case in examples + hidden:
        if case.name in seen:
            raise GraderError(
                f"{case.source}: name {case.name!r} is already used by {seen[case.name]}"
            )
        seen[case.name] = case.source
    return Problem(root=root, tolerance=base, examples=examples, hidden=hidden)


Reference = Callable[[list[int], int], Any]


def load_reference(problem: Problem) -> Reference:
    """Import the trusted reference solution into the grader's own process."""
    path = problem.reference_path
    spec = importlib.util.spec_from_file_location("_grader_reference", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise GraderError(f"reference solution {REFERENCE_FILE} is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    func = getattr(module, FUNCTION_NAME, None)
    if not callable(func):
        raise GraderError(f"{REFERENCE_FILE} does not define {FUNCTION_NAME}()")
    return func  # type: ignore[no-any-return]


def expected_for(case: Case, reference: Reference) -> Array:
    """Return the case's stored expectation, or compute it with the reference."""
    if case.expected is not None:
        return case.expected
    return np.asarray(reference(list(case.positions), case.d_model), dtype=np.float64)


def as_mapping(case: Case) -> Mapping[str, object]:
    """Return the inputs of a case as the child receives them: nothing else."""
    return {"positions": list(case.positions), "d_model": case.d_model}
