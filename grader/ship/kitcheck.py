"""The learner kit's check: that it holds no hidden case, no reference code and no known
table of a hidden case, in any file, written out or as data."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib.util import decode_source
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.errors import GraderError
from grader.files import PACKAGE
from grader.problem.casefile import Case
from grader.problem.cases import Checked, check_problem
from grader.problem.exercise import EXERCISE_FILE
from grader.problem.layout import (
    EXAMPLES_FILE,
    EXERCISES_DIR,
    HIDDEN_DIR,
    REFERENCE_FILE,
    STAFF_FILE,
)
from grader.problem.rules import Rules, load_rules
from grader.records import Tolerance
from grader.ship.kitdata import (
    DATA_SUFFIXES,
    WRITTEN,
    Data,
    PublicInput,
    PublicTable,
    public_data,
    read_data,
    written_inputs,
)

if TYPE_CHECKING:
    from grader.compare import Array

# What the kit carries of the grader's own home: how to install it, beside the package.
HOME_FILES = ("pyproject.toml",)


def public_files(root: Path) -> list[str]:
    """Return what the kit carries of the exercise: its examples and every file of its
    `problem/` folder but the staff module: all of it public."""
    folder = root / "problem"
    found = sorted(
        str(p.relative_to(root))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    return [EXAMPLES_FILE, *(name for name in found if name != str(STAFF_FILE))]


def _secret_lines(
    root: Path, public: set[str], names: Sequence[str]
) -> tuple[dict[str, str], set[str]]:
    """Return the hidden cases' telling lines (to their file) and the reference's code lines.

    From the hidden cases: the lines that hold inputs or say what a case checks (names alone
    are shown in every report and are no secret). From the reference: its lines of code
    long enough to say something (not `return out`).
    A reference line that also occurs in a public file (the signature the starter shows)
    proves nothing; a hidden case's line in a public file is a leak like any other (the
    statement or examples.yaml is exactly where one would be written).
    """
    telling = (*(f"{name}:" for name in names), "why:", "expected:", "- [")
    cases: dict[str, str] = {}
    for path in sorted((root / HIDDEN_DIR).glob("*.yaml")):
        for line in path.read_text("utf-8", errors="replace").splitlines():
            text = line.strip()
            if text.startswith(telling):
                cases[text] = str(path.relative_to(root))
    reference = {
        text
        # As Python reads it: a coding cookie (latin-1) is the reference's to choose.
        for line in decode_source((root / REFERENCE_FILE).read_bytes()).splitlines()
        if len(text := line.strip()) >= 20
        and not text.startswith(("#", '"""', "import ", "from "))
        and text not in public
    }
    return cases, reference


def exercise_roots(root: Path) -> list[Path]:
    """Return ``root`` and every other exercise beside the grader: its home's, and each
    of its `exercises/`. A kit of one must hold nothing of any other's secrets either."""
    home = PACKAGE.parent
    found = [root]
    folder = home / EXERCISES_DIR
    others = sorted(folder.iterdir()) if folder.is_dir() else []
    for candidate in (home, *others):
        if (
            (candidate / EXERCISE_FILE).is_file()
            and (candidate / REFERENCE_FILE).is_file()
            and candidate.resolve() != root.resolve()
        ):
            found.append(candidate)
    return found


# A file holding this share of the reference's lines of code holds the reference. The
# grader's variants.py shares half of them: it computes the right table too, in the same
# idiomatic numpy, to name the mistakes against it.
REFERENCE_SHARE = 0.75


def verify_learner(root: Path, bundle: Path) -> list[str]:
    """Check that no file of ``bundle`` holds a hidden case, a reference or the formula,
    of this exercise or of any other beside the grader.

    Text is compared line by line; data (YAML, numpy) is parsed, and its inputs and tables
    are compared with the hidden cases' inputs and expected tables. Return the bundle's files.
    """
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    names = [str(p.relative_to(bundle)) for p in files]
    forbidden = [n for n in names if n.split("/")[0] in (HIDDEN_DIR, "solutions", "tests")]
    forbidden += [n for n in names if n.endswith(str(STAFF_FILE))]
    if forbidden:
        raise GraderError(f"learner bundle would contain {', '.join(forbidden)}")
    # Each file read once, as text and (its data files) as data; every exercise's
    # secrets are then looked for in them.
    texts = {path: path.read_text("utf-8", errors="replace") for path in files}
    data = read_data(bundle, [p for p in files if p.suffix in DATA_SUFFIXES])
    written = written_inputs(bundle, texts)
    for exercise in exercise_roots(root):
        checked = check_problem(exercise, examples=False)
        _check_secrets(exercise, checked, bundle, texts, data, written)
    formula = load_rules(root).formula
    for path, text in texts.items():
        if formula and path.suffix == ".py" and re.search(formula, text):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} computes the formula "
                f"(it matches {formula!r}): the kit must carry no implementation of it"
            )
    return names


def _check_secrets(
    root: Path,
    checked: Checked,
    bundle: Path,
    texts: Mapping[Path, str],
    data: Sequence[Data],
    written: list[PublicInput],
) -> None:
    """Refuse a kit holding one exercise's hidden inputs, expected tables or reference."""
    problem = checked.problem
    # Data first, compared as what it means: lines of text miss a hidden input written
    # another way ([1,2], a range for a list), and say less about where it is.
    inputs, tables = public_data(data, problem.rules.inputs)
    _check_inputs(inputs + written, problem.hidden, problem.rules)
    _check_tables(tables, problem.hidden, checked.expected)
    public = {
        line.strip()
        for name in public_files(root)
        for line in (root / name).read_text("utf-8", errors="replace").splitlines()
    }
    # A list's line tells the case; an integer's (a width of 2) is in any example too.
    lists = [f.name for f in problem.rules.inputs.fields if f.kind != "integer"]
    cases, reference = _secret_lines(root, public, lists)
    for path, text in texts.items():
        lines = {line.strip() for line in text.splitlines()}
        for line in sorted(lines & cases.keys()):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} contains a line of "
                f"{cases[line]}: {line!r}"
            )
        if reference and len(lines & reference) >= REFERENCE_SHARE * len(reference):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} contains the reference's code "
                f"({len(lines & reference)} of its {len(reference)} lines)"
            )


def _rows(values: Mapping[str, Any], names: Sequence[str]) -> list[tuple[Any, ...]]:
    """Return each row's items of the row inputs (a table's row as its bytes)."""
    columns = [
        [row.tobytes() for row in values[n]] if hasattr(values[n], "dtype") else list(values[n])
        for n in names
    ]
    return list(zip(*columns, strict=False))


def _check_inputs(inputs: Sequence[PublicInput], hidden: Sequence[Case], rules: Rules) -> None:
    """Refuse a public input equal to a hidden one, or holding every row of one.

    A superset gives the case away too, where each row of the answer depends on its own
    items only (the exercise's ROW_INPUTS): the rows of its table, picked out, are the
    hidden case's answer.
    """
    row_names = rules.row_inputs
    lists = [f.name for f in rules.inputs.fields if f.kind == "integer list"]
    needed = [
        (case, frozenset(_rows(case.inputs, row_names)) if row_names else None) for case in hidden
    ]
    for public in inputs:
        for case, rows in needed:
            if public.written:
                shown = public.values[WRITTEN]
                if any(
                    len(shown) == len(case.inputs[n]) and tuple(shown) == case.inputs[n]
                    for n in lists
                ):
                    raise GraderError(
                        f"learner bundle file {public.where} is the input of {case.source}: "
                        "the kit must not show a hidden case"
                    )
                continue
            if set(public.values) != set(case.inputs):
                continue  # another exercise's input: it cannot be this one's
            if public.values == case.inputs:
                raise GraderError(
                    f"learner bundle file {public.where} is the input of {case.source}: "
                    "the kit must not show a hidden case"
                )
            if rows is None or not _alike(public.values, case.inputs, rules):
                continue
            if rows <= set(_rows(public.values, row_names)):
                raise GraderError(
                    f"learner bundle file {public.where} holds every row of {case.source}: "
                    "the kit must not show a hidden case"
                )


def _alike(public: Mapping[str, Any], hidden: Mapping[str, Any], rules: Rules) -> bool:
    """Whether a table for ``public`` holds the rows of one for ``hidden``, their row
    inputs aside: the other inputs equal, or as the exercise's same_rows says."""
    if rules.same_rows is not None:
        return bool(rules.same_rows(public, hidden))
    others = [n for n in rules.inputs.names if n not in rules.row_inputs]
    return all(public[n] == hidden[n] for n in others)


def _check_tables(
    tables: Sequence[PublicTable], hidden: Sequence[Case], expected: dict[str, Array]
) -> None:
    """Refuse a kit whose tables hold every row of a hidden case's expected table.

    A row is held when a public row is within the case's own tolerance of it: then a file
    that looks its answers up in the kit's data passes the case. Every table counts, the
    known mistakes' too, and all of them together: a learner can read them all.
    """
    import numpy as np

    # An answer of one axis is one row.
    answers = {c.name: expected[c.name].reshape(-1, expected[c.name].shape[-1]) for c in hidden}
    for width in sorted({answers[case.name].shape[1] for case in hidden}):
        same = [table for table in tables if table.rows.shape[1] == width]
        if not same:
            continue
        stacked = np.concatenate([table.rows for table in same])
        owner = np.repeat(np.arange(len(same)), [len(table.rows) for table in same])
        # Sorted rows, the first column ascending (np.unique sorts), each kept once.
        rows, first = np.unique(stacked, axis=0, return_index=True)
        for case in (c for c in hidden if answers[c.name].shape[1] == width):
            found = _held_rows(rows, answers[case.name], case.tolerance)
            if found is not None:
                places = sorted({same[i].where for i in owner[first[found]]})
                more = f" and {len(places) - 2} more" if len(places) > 2 else ""
                raise GraderError(
                    f"learner bundle holds the expected table of {case.source}: each of its "
                    f"rows is in {', '.join(places[:2])}{more}"
                )


def _held_rows(rows: Array, wanted: Array, tol: Tolerance) -> list[int] | None:
    """Return, per row of ``wanted``, a row of ``rows`` within ``tol`` of it; None if one has none.

    ``rows`` is sorted by its first column, so a wanted row meets only the rows whose first
    value is near its own: a search, not a comparison of every row with every row.
    """
    import numpy as np

    keys = rows[:, 0]
    # Twice the tolerance: a bound to search with; the exact one is checked below.
    margin = 2 * (tol.atol + tol.rtol * np.abs(wanted[:, 0]))
    low = np.searchsorted(keys, wanted[:, 0] - margin, side="left")
    high = np.searchsorted(keys, wanted[:, 0] + margin, side="right")
    if np.any(low == high):
        return None
    found = []
    for row, start, stop in zip(wanted, low, high, strict=True):
        bound = tol.atol + tol.rtol * np.abs(row)
        near = np.flatnonzero(np.all(np.abs(rows[start:stop] - row) <= bound, axis=1))
        if near.size == 0:
            return None
        found.append(int(start + near[0]))
    return found
