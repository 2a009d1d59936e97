"""The learner kit's check: that it holds no hidden case, no reference code and no known
table of a hidden case, in any file, written out or as data."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from importlib.util import decode_source
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from grader.errors import GraderError, Refused
from grader.problem.casefile import Case
from grader.problem.cases import check_problem
from grader.problem.layout import (
    EXAMPLES_FILE,
    HIDDEN_DIR,
    KIT_DATA_DIR,
    REFERENCE_FILE,
)
from grader.records import Tolerance

if TYPE_CHECKING:
    from grader.compare import Array

# What the kit carries of the problem: all of it public.
PUBLIC_FILES = (
    "pyproject.toml",
    EXAMPLES_FILE,
    "problem/statement.md",
    "problem/starter.py",
    "problem/exercise.py",
)
# A call of sin or cos in Python code: the kit's code must make none (the practice page's
# drawing code is part of the statement, and is JavaScript).
FORMULA_CALL = re.compile(r"\b(?:sin|cos)\s*\(")


def _secret_lines(root: Path, public: set[str]) -> tuple[dict[str, str], set[str]]:
    """Return the hidden cases' telling lines (to their file) and the reference's code lines.

    From the hidden cases: the lines that hold inputs or say what a case checks (names alone
    are shown in every report and are no secret). From the reference: its lines of code
    long enough to say something (not `return out`).
    A reference line that also occurs in a public file (the signature the starter shows)
    proves nothing; a hidden case's line in a public file is a leak like any other (the
    statement or examples.yaml is exactly where one would be written).
    """
    cases: dict[str, str] = {}
    for path in sorted((root / HIDDEN_DIR).glob("*.yaml")):
        for line in path.read_text("utf-8", errors="replace").splitlines():
            text = line.strip()
            if text.startswith(("positions:", "why:", "expected:", "- [")):
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


# A file holding this share of the reference's lines of code holds the reference. The
# grader's variants.py shares half of them: it computes the right table too, in the same
# idiomatic numpy, to name the mistakes against it.
REFERENCE_SHARE = 0.75


def verify_learner(root: Path, bundle: Path) -> list[str]:
    """Check that no file of ``bundle`` holds a hidden case, the reference or the formula.

    Text is compared line by line; data (YAML, numpy) is parsed, and its inputs and tables
    are compared with the hidden cases' inputs and expected tables. Return the bundle's files.
    """
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    names = [str(p.relative_to(bundle)) for p in files]
    forbidden = [n for n in names if n.split("/")[0] in (HIDDEN_DIR, "solutions", "tests")]
    if forbidden:
        raise GraderError(f"learner bundle would contain {', '.join(forbidden)}")
    # Data first, compared as what it means: lines of text miss a hidden input written
    # another way ([1,2], a range for a list), and say less about where it is.
    inputs, tables = _public_data(bundle, [p for p in files if p.suffix in DATA_SUFFIXES])
    inputs += _written_inputs(bundle, files)
    checked = check_problem(root, examples=False)
    _check_inputs(inputs, checked.problem.hidden)
    _check_tables(tables, checked.problem.hidden, checked.expected)
    public = {
        line.strip()
        for name in PUBLIC_FILES
        for line in (bundle / name).read_text("utf-8", errors="replace").splitlines()
    }
    cases, reference = _secret_lines(root, public)
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
        if path.suffix == ".py" and FORMULA_CALL.search(text):
            raise GraderError(
                f"learner bundle file {path.relative_to(bundle)} computes sin or cos: the kit "
                "must carry no implementation of the formula"
            )
    return names


# The kit's files read as data, by suffix: YAML (JSON is YAML too) and numpy's files.
DATA_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "yaml", ".npz": "numpy", ".npy": "numpy"}


class PublicInput(NamedTuple):
    """An input the kit shows: where, its positions (a range kept as one) and its d_model."""

    where: str
    positions: Sequence[int]
    # None: positions stored with no table to give their width; compared at every d_model.
    d_model: int | None
    # Read out of text (prose, code, a comment), where a list may hold any numbers at all:
    # only an exact match of a hidden case's positions counts, not a superset.
    written: bool = False


# A list of whole numbers as prose, Python or YAML writes it, and a range of them as
# Python or the case files write it (a range call, or a mapping with a range key).
_LIST = re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\]")
_RANGE = re.compile(
    r"range\s*(?:\(|:\s*\[)\s*(-?\d+)\s*(?:,\s*(-?\d+)\s*)?(?:,\s*(-?\d+)\s*)?,?\s*[)\]]"
)


def _written_inputs(bundle: Path, files: Sequence[Path]) -> list[PublicInput]:
    """Return every list or range of whole numbers written in the kit's text files.

    The statement, the starter, a comment in examples.yaml or a sentence of a probe's why
    can carry a hidden case's positions as well as a probe can.
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
            found.append(PublicInput(where, numbers, None, written=True))
        for match in _RANGE.finditer(text):
            args = [int(a) for a in match.groups() if a is not None]
            if 0 not in args[2:]:
                found.append(PublicInput(where, range(*args), None, written=True))
    return found


class PublicTable(NamedTuple):
    """A table of numbers the kit holds, as rows of its last axis, and where it is."""

    where: str
    rows: Array


def _public_data(
    bundle: Path, files: Sequence[Path]
) -> tuple[list[PublicInput], list[PublicTable]]:
    """Return every input and table that the kit's data files hold."""
    from grader.problem.yamlsafe import load_file

    inputs: list[PublicInput] = []
    tables: list[PublicTable] = []
    for path in files:
        name = str(path.relative_to(bundle))
        try:
            if DATA_SUFFIXES[path.suffix] == "yaml":
                _walk(load_file(path).data, name, "", inputs, tables)
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


def _whole(value: object) -> int | None:
    """Return a YAML value as an integer when it is one (3, or 3.0), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _parsed_positions(raw: object) -> Sequence[int] | None:
    """Return positions written as a list or as ``{range: [start, stop(, step)]}``, else None.

    A range stays one: a huge one costs nothing, and membership in it is a comparison.
    """
    if isinstance(raw, dict) and set(raw) == {"range"} and isinstance(raw["range"], list):
        args = [a for a in map(_whole, raw["range"]) if a is not None]
        if len(args) == len(raw["range"]) and 1 <= len(args) <= 3 and 0 not in args[2:]:
            return range(*args)
        return None
    if isinstance(raw, list) and raw:
        positions = tuple(p for p in map(_whole, raw) if p is not None)
        return positions if len(positions) == len(raw) else None
    return None


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
    node: object, name: str, path: str, inputs: list[PublicInput], tables: list[PublicTable]
) -> None:
    """Collect every input (a mapping with positions and d_model) and table under ``node``."""
    where = f"{name} ({path})" if path else name
    if isinstance(node, dict):
        positions = _parsed_positions(node.get("positions"))
        d_model = _whole(node.get("d_model"))
        if positions is not None and d_model is not None:
            inputs.append(PublicInput(where, positions, d_model))
        for key, value in node.items():
            _walk(value, name, f"{path}.{key}" if path else str(key), inputs, tables)
    elif isinstance(node, list):
        table = _yaml_table(node)
        if table is not None:
            tables.append(PublicTable(where, table))
            return  # rows of numbers: nothing else inside
        for i, item in enumerate(node):
            _walk(item, name, f"{path}[{i}]", inputs, tables)


def _numpy_data(
    path: Path, name: str, inputs: list[PublicInput], tables: list[PublicTable]
) -> None:
    """Collect the tables (float arrays) and inputs (``*positions`` arrays) of a numpy file.

    A positions array's d_model is the width of the tables named like it with one row per
    position (known_tables.npz: ``i0_positions`` beside ``i0_right``).
    """
    import numpy as np

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
        elif key.endswith("positions") and array.ndim == 1 and array.dtype.kind in "iu":
            prefix = key.removesuffix("positions")
            widths = {
                int(other.shape[-1])
                for k, other in arrays.items()
                if k != key and k.startswith(prefix) and other.ndim >= 2
                if other.shape[-2] == array.size
            }
            positions = tuple(int(p) for p in array)
            d_models: list[int | None] = [*sorted(widths)] or [None]
            inputs += [PublicInput(where, positions, d) for d in d_models]


def _check_inputs(inputs: Sequence[PublicInput], hidden: Sequence[Case]) -> None:
    """Refuse a public input equal to a hidden one, or holding all its positions at its d_model.

    A superset gives the case away too: the rows of its table, picked by position, are the
    hidden case's answer.
    """
    needed = [(case, frozenset(case.positions)) for case in hidden]
    for public in inputs:
        shown = public.positions
        held = shown if isinstance(shown, range) else frozenset(shown)
        for case, positions in needed:
            # A table at a multiple of a hidden d_model holds the hidden table's columns:
            # pair k * i at k * d has the frequency of pair i at d.
            if public.d_model is not None and public.d_model % case.d_model:
                continue
            if len(shown) == len(case.positions) and tuple(shown) == case.positions:
                raise GraderError(
                    f"learner bundle file {public.where} is the input of {case.source}: "
                    "the kit must not show a hidden case"
                )
            if not public.written and all(p in held for p in positions):
                raise GraderError(
                    f"learner bundle file {public.where} holds every position of "
                    f"{case.source} at its d_model {case.d_model}: the kit must not show a "
                    "hidden case"
                )


def _check_tables(
    tables: Sequence[PublicTable], hidden: Sequence[Case], expected: dict[str, Array]
) -> None:
    """Refuse a kit whose tables hold every row of a hidden case's expected table.

    A row is held when a public row is within the case's own tolerance of it: then a file
    that looks its answers up in the kit's data passes the case. Every table counts, the
    known mistakes' too, and all of them together: a learner can read them all.
    """
    import numpy as np

    for width in sorted({case.d_model for case in hidden}):
        same = [table for table in tables if table.rows.shape[1] == width]
        if not same:
            continue
        stacked = np.concatenate([table.rows for table in same])
        owner = np.repeat(np.arange(len(same)), [len(table.rows) for table in same])
        # Sorted rows, the first column ascending (np.unique sorts), each kept once.
        rows, first = np.unique(stacked, axis=0, return_index=True)
        for case in (c for c in hidden if c.d_model == width):
            found = _held_rows(rows, expected[case.name], case.tolerance)
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
