"""The learner kit's check: that it holds no hidden case, no reference code and no known
table of a hidden case, in any file, written out or as data."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from importlib.util import decode_source
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.errors import GraderError, Refused
from grader.files import PACKAGE
from grader.problem.casefile import Case
from grader.problem.cases import Checked, check_problem
from grader.problem.exercise import EXERCISE_FILE
from grader.problem.layout import (
    EXAMPLES_FILE,
    EXERCISES_DIR,
    HIDDEN_DIR,
    KIT_DATA_DIR,
    REFERENCE_FILE,
    STAFF_FILE,
)
from grader.problem.rules import Rules
from grader.problem.schema import InputSchema, InvalidInputs, check_inputs
from grader.records import Tolerance

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
    written = _written_inputs(bundle, files)
    for exercise in exercise_roots(root):
        checked = check_problem(exercise, examples=False)
        _check_secrets(exercise, checked, bundle, files, written)
    formula = check_problem(root, examples=False, hidden=False).problem.rules.formula
    for path in files:
        text = path.read_text("utf-8", errors="replace") if path.suffix == ".py" else ""
        if formula and re.search(formula, text):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} computes the formula "
                f"(it matches {formula!r}): the kit must carry no implementation of it"
            )
    return names


def _check_secrets(
    root: Path, checked: Checked, bundle: Path, files: Sequence[Path], written: list[PublicInput]
) -> None:
    """Refuse a kit holding one exercise's hidden inputs, expected tables or reference."""
    problem = checked.problem
    # Data first, compared as what it means: lines of text miss a hidden input written
    # another way ([1,2], a range for a list), and say less about where it is.
    data = [p for p in files if p.suffix in DATA_SUFFIXES]
    inputs, tables = _public_data(bundle, data, problem.rules.inputs)
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
    for path in files:
        text = path.read_text("utf-8", errors="replace")
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


# The kit's files read as data, by suffix: YAML (JSON is YAML too) and numpy's files.
DATA_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "yaml", ".npz": "numpy", ".npy": "numpy"}


class PublicInput(NamedTuple):
    """An input the kit shows, and where: all of a case's fields, or (``written``) a list
    of whole numbers read out of text (prose, code, a comment), where a list may hold any
    numbers at all: only an exact match of a hidden list counts then, not a superset."""

    where: str
    values: Mapping[str, Any]
    written: bool = False


# A list of whole numbers as prose, Python or YAML writes it, and a range of them as
# Python or the case files write it (a range call, or a mapping with a range key).
_LIST = re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\]")
_RANGE = re.compile(
    r"range\s*(?:\(|:\s*\[)\s*(-?\d+)\s*(?:,\s*(-?\d+)\s*)?(?:,\s*(-?\d+)\s*)?,?\s*[)\]]"
)
WRITTEN = "(written)"


def _written_inputs(bundle: Path, files: Sequence[Path]) -> list[PublicInput]:
    """Return every list or range of whole numbers written in the kit's text files.

    The statement, the starter, a comment in examples.yaml or a sentence of a probe's why
    can carry a hidden case's list as well as a probe can.
    """
    found: list[PublicInput] = []
    for path in files:
        parts = path.relative_to(bundle).parts
        # The grader's own code and templates are the project's, not the course's: what an
        # author writes is the problem's files and the kit's data.
        ours = parts[0] == "grader" and KIT_DATA_DIR not in parts
        if ours or path.suffix in (".npz", ".npy", ".png"):
            continue
        text = path.read_text("utf-8", errors="replace")
        where = str(path.relative_to(bundle))
        for match in _LIST.finditer(text):
            numbers = tuple(int(n) for n in re.findall(r"-?\d+", match[0]))
            found.append(PublicInput(where, {WRITTEN: numbers}, written=True))
        for match in _RANGE.finditer(text):
            args = [int(a) for a in match.groups() if a is not None]
            if 0 not in args[2:]:
                found.append(PublicInput(where, {WRITTEN: range(*args)}, written=True))
    return found


class PublicTable(NamedTuple):
    """A table of numbers the kit holds, as rows of its last axis, and where it is."""

    where: str
    rows: Array


def _public_data(
    bundle: Path, files: Sequence[Path], schema: InputSchema
) -> tuple[list[PublicInput], list[PublicTable]]:
    """Return every input and table that the kit's data files hold."""
    from grader.problem.yamlsafe import load_file

    inputs: list[PublicInput] = []
    tables: list[PublicTable] = []
    for path in files:
        name = str(path.relative_to(bundle))
        try:
            if DATA_SUFFIXES[path.suffix] == "yaml":
                _walk(load_file(path).data, name, "", schema, inputs, tables)
            else:
                _numpy_data(path, name, inputs, tables)
        except Refused as refused:
            # The one YAML loader's bounds: what it refuses cannot be checked either.
            raise GraderError(
                f"learner bundle file {name} cannot be read as data to be checked: {refused}"
            ) from None
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            # UnicodeDecodeError is a ValueError. What cannot be read cannot be checked.
            raise GraderError(
                f"learner bundle file {name} cannot be read as data to be checked: "
                f"{type(exc).__name__}"
            ) from None
    return inputs, tables


def _yaml_table(node: list[object]) -> Array | None:
    """Return a list of equally long lists of numbers as a table, else None."""
    import numpy as np

    rows = [row for row in node if isinstance(row, list)]
    if not rows or len(rows) != len(node) or len({len(row) for row in rows}) != 1:
        return None
    numbers = all(
        isinstance(v, int | float) and not isinstance(v, bool) for row in rows for v in row
    )
    return np.array(rows, dtype=np.float64) if numbers and rows[0] else None


def _walk(
    node: object,
    name: str,
    path: str,
    schema: InputSchema,
    inputs: list[PublicInput],
    tables: list[PublicTable],
) -> None:
    """Collect every input (a mapping holding each of the inputs) and table under ``node``."""
    where = f"{name} ({path})" if path else name
    if isinstance(node, dict):
        if all(field in node for field in schema.names):
            try:
                values = check_inputs({str(k): v for k, v in node.items()}, schema)
                inputs.append(PublicInput(where, values))
            except InvalidInputs:
                pass  # no input the grader would take: it cannot be a hidden one
        for key, value in node.items():
            _walk(value, name, f"{path}.{key}" if path else str(key), schema, inputs, tables)
    elif isinstance(node, list):
        table = _yaml_table(node)
        if table is not None:
            tables.append(PublicTable(where, table))
            return  # rows of numbers: nothing else inside
        for i, item in enumerate(node):
            _walk(item, name, f"{path}[{i}]", schema, inputs, tables)


def _numpy_data(
    path: Path, name: str, inputs: list[PublicInput], tables: list[PublicTable]
) -> None:
    """Collect the tables (float arrays) and the stored inputs of a numpy file (the known
    tables' file names each input's fields, see verdict/known.py)."""
    import numpy as np

    from grader.verdict.known import input_fields

    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.ndarray):
        arrays = {"": loaded}
    else:
        with loaded:
            arrays = {key: loaded[key] for key in loaded.files}
    for key, array in arrays.items():
        where = f"{name} ({key})" if key else name
        if array.dtype.kind == "f" and array.ndim >= 2 and array.shape[-1]:
            rows = array.reshape(-1, array.shape[-1]).astype(np.float64)
            tables.append(PublicTable(where, rows))
    for number, values in input_fields(arrays).items():
        inputs.append(PublicInput(f"{name} (input {number})", values))


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
