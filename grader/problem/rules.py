"""The exercise's public module, run: everything of the exercise past its function's name.

Imported once the child has been started (dataclasses, the schema and whatever the module
imports cost start-up time), as a module of its folder's `problem/` package: the module
may import its sibling modules relatively, and shadows nothing of the grader's or the
learner's. The staff module beside it (`problem/staff.py`) is imported the same way where
it exists: in the grader's tree, never in a learner kit.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from grader.errors import GraderError
from grader.files import PACKAGE, no_bytecode
from grader.problem.exercise import EXERCISE_FILE, Exercise, load_exercise
from grader.problem.kinds import InputKind
from grader.problem.layout import STAFF_FILE
from grader.problem.schema import InputSchema

# What an exercise's public module may declare beyond its function and inputs, each with
# what it must be; anything else it defines is its own business.
PUBLIC_NAMES = (
    "INPUTS",
    "SENTENCES",
    "HINTS",
    "SHAPE_HINTS",
    "ANSWER_HINTS",
    "ROWS",
    "ROW_INPUTS",
    "FORMULA",
    "LABELS",
    "diagnose",
    "where",
    "same_rows",
    "RAISED_HINTS",
    "diagnose_raised",
)


@dataclass(frozen=True)
class Rules:
    """What the exercise's public module declares: everything of the exercise the grader
    needs past the function's name, read once the child has been started.

    ``inputs``: the fields, their bounds and the answer's shape. ``sentences``: the
    exercise's wording of vocabulary sentences (by key). ``hints``: each known mistake's
    code and sentence; ``shape_hints`` those a wrong shape can earn, ``answer_hints`` those
    wrong values of the right shape can. ``rows``: the input
    whose items label the answer's rows; ``row_inputs`` the inputs each row depends on
    item by item (a kit holding a hidden case's rows gives them away). ``formula``: a
    pattern the kit's code must not match (it would compute the answer); ``labels`` name
    the answer's rows and columns in pictures. ``diagnose``,
    ``where`` and ``same_rows`` are the module's own functions, or None. ``raised_hints``:
    the hints an exception can earn, each with the one exception name it goes with (on a
    hidden case, one fixed sentence beside "raised NAME"); ``diagnose_raised`` names them.
    """

    exercise: Exercise
    inputs: InputSchema
    sentences: Mapping[str, str] = field(default_factory=dict)
    hints: Mapping[str, str] = field(default_factory=dict)
    shape_hints: frozenset[str] = frozenset()
    answer_hints: frozenset[str] = frozenset()
    rows: str | None = None
    row_inputs: tuple[str, ...] = ()
    formula: str | None = None
    labels: tuple[str, str] = ("row", "column")  # the answer's axes, in pictures
    diagnose: Callable[..., str | tuple[str, str] | None] | None = None
    where: Callable[[Mapping[str, Any], int, int], str] | None = None
    same_rows: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = None
    raised_hints: Mapping[str, str] = field(default_factory=dict)
    diagnose_raised: Callable[..., str | tuple[str, str] | None] | None = None


def _package(root: Path) -> str:
    """Return the name of the exercise folder's `problem/` as a package, made once."""
    name = "grader_exercise_" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(root / "problem")]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    return name


def import_module(root: Path, stem: str) -> ModuleType:
    """Import ``problem/STEM.py`` of the exercise folder, as a module of its own package
    (so that its modules import each other relatively, and shadow nothing)."""
    with no_bytecode():
        return importlib.import_module(f"{_package(root)}.{stem}")


@functools.cache
def load_rules(root: Path) -> Rules:
    """Import the exercise's public module and check what it declares; GraderError if a
    declaration is missing or of the wrong kind."""
    exercise = load_exercise(root)
    try:
        module = import_module(root, "exercise")
    except Exception as exc:  # noqa: BLE001 - an author's broken module, said as such
        raise GraderError(f"{EXERCISE_FILE}: import failed: {type(exc).__name__}: {exc}") from None
    found = {name: getattr(module, name) for name in PUBLIC_NAMES if hasattr(module, name)}
    inputs = found.get("INPUTS")
    if (
        not isinstance(inputs, InputSchema)
        or not all(isinstance(spec, InputKind) for spec in inputs.fields)
        or inputs.names != exercise.arguments
    ):
        raise GraderError(
            f"{EXERCISE_FILE}: INPUTS must be an InputSchema declaring {exercise.arguments}, "
            f"each a Field or an input kind ({PACKAGE.name}/problem/kinds.py)"
        )
    hints = dict(found.get("HINTS", {}))
    shape_hints = frozenset(found.get("SHAPE_HINTS", ()))
    raised_hints = dict(found.get("RAISED_HINTS", {}))
    rules = Rules(
        exercise=exercise,
        inputs=inputs,
        sentences=dict(found.get("SENTENCES", {})),
        hints=hints,
        shape_hints=shape_hints,
        answer_hints=frozenset(
            found.get("ANSWER_HINTS", set(hints) - shape_hints - set(raised_hints))
        ),
        rows=found.get("ROWS"),
        row_inputs=tuple(found.get("ROW_INPUTS", ())),
        formula=found.get("FORMULA"),
        labels=tuple(found.get("LABELS", ("row", "column"))),
        diagnose=found.get("diagnose"),
        where=found.get("where"),
        same_rows=found.get("same_rows"),
        raised_hints=raised_hints,
        diagnose_raised=found.get("diagnose_raised"),
    )
    _check_rules(rules)
    return rules


def _check_rules(rules: Rules) -> None:
    names = rules.inputs.names
    if rules.inputs.axes not in (1, 2):
        raise GraderError(f"{EXERCISE_FILE}: INPUTS.axes must be 1 (a list) or 2 (a table)")
    if rules.rows is not None and rules.rows not in names:
        raise GraderError(f"{EXERCISE_FILE}: ROWS must name one of {names}")
    if not set(rules.row_inputs) <= set(names):
        raise GraderError(f"{EXERCISE_FILE}: ROW_INPUTS must name inputs among {names}")
    if not set(rules.raised_hints) <= set(rules.hints) or rules.raised_hints.keys() & (
        rules.shape_hints | rules.answer_hints
    ):
        raise GraderError(
            f"{EXERCISE_FILE}: RAISED_HINTS must be codes of HINTS that no table can earn"
        )
    if not (rules.shape_hints | rules.answer_hints) <= set(rules.hints):
        raise GraderError(f"{EXERCISE_FILE}: SHAPE_HINTS and ANSWER_HINTS must be codes of HINTS")
    if not all(isinstance(t, str) for t in (*rules.hints.values(), *rules.sentences.values())):
        raise GraderError(f"{EXERCISE_FILE}: HINTS and SENTENCES must map names to sentences")


@functools.cache
def load_staff(root: Path) -> ModuleType | None:
    """Import the exercise's staff module (the known mistakes' generators), if the folder
    has one: the grader's tree has, a learner kit never. Once: every diagnosis asks."""
    if not (root / STAFF_FILE).is_file():
        return None
    return import_module(root, "staff")
