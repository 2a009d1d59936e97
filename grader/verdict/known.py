"""Where a case's known mistakes come from: the exercise's staff module, or the learner
kit's stored tables.

In the grader's tree the staff module (problem/staff.py) computes them from the inputs;
a learner kit has no staff module, and carries instead what the staff module computed at
bundle time for its public inputs (known_tables.npz): for any other input it knows none.
The exercise's own diagnose reads either.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grader.files import PACKAGE
from grader.problem.layout import KIT_DATA_DIR, KNOWN_TABLES
from grader.problem.rules import load_staff
from grader.problem.schema import Inputs, ReadOnly

# How a stored input's fields, and its tables, are named in the kit's file.
INPUT_KEY = "i{number}.in.{name}"
TABLE_KEY = "i{number}.{name}"


class Stored(ReadOnly):
    """The tables the kit stored for one input, by the names the staff module gave them.
    Hashed by identity: an exercise may cache what it derives from them."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


def known_source(root: Path, inputs: Inputs) -> Any:
    """Return the staff module, or the kit's tables for ``inputs``, or None."""
    staff = load_staff(root)
    if staff is not None:
        return staff
    return stored_tables().get(inputs)


def stored_arrays(
    number: int, inputs: Mapping[str, Any], tables: Mapping[str, Any]
) -> dict[str, Any]:
    """Return the arrays the kit stores for its ``number``-th public input."""
    import numpy as np

    out: dict[str, Any] = {}
    for name, value in inputs.items():
        array = np.asarray(value, dtype=np.float64 if hasattr(value, "dtype") else np.int64)
        out[INPUT_KEY.format(number=number, name=name)] = array
    for name, table in tables.items():
        out[TABLE_KEY.format(number=number, name=name)] = table
    return out


@functools.lru_cache(maxsize=1)
def stored_tables() -> dict[Inputs, Stored]:
    """Return the tables the learner kit carries for its public inputs (none in the grader)."""
    import numpy as np

    path = PACKAGE / KIT_DATA_DIR / KNOWN_TABLES
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        found = _by_input({key: data[key] for key in data.files})
    return {Inputs(inputs): Stored(tables) for inputs, tables in found.values()}


def _by_input(arrays: Mapping[str, Any]) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
    """Return the stored arrays by input number: its fields, as the schema holds them, and
    its tables (the names INPUT_KEY and TABLE_KEY gave them)."""
    found: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for key, array in arrays.items():
        number, _, rest = key.partition(".")
        if not (number[:1] == "i" and number[1:].isdigit() and rest):
            continue  # no name this module gives
        inputs, tables = found.setdefault(int(number[1:]), ({}, {}))
        if rest.startswith("in."):
            inputs[rest[3:]] = _field(array)
        else:
            tables[rest] = array
    return found


def _field(array: Any) -> Any:
    """Return a stored input field as the schema holds it."""
    if array.dtype.kind == "f":
        array.setflags(write=False)
        return array
    if array.ndim == 0:
        return int(array)
    return tuple(int(v) for v in array)


def input_fields(arrays: Mapping[str, Any]) -> dict[int, Inputs]:
    """Return the inputs stored among ``arrays`` (a kit's known tables), by number."""
    return {number: Inputs(fields) for number, (fields, _) in _by_input(arrays).items() if fields}
