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
from grader.problem.rules import load_rules, load_staff
from grader.problem.schema import Inputs, InputSchema, ReadOnly

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
    return stored_tables(root).get(inputs)


def stored_arrays(number: int, inputs: Inputs, tables: Mapping[str, Any]) -> dict[str, Any]:
    """Return the arrays the kit stores for its ``number``-th public input."""
    out: dict[str, Any] = {}
    for name, value in inputs.items():
        out[INPUT_KEY.format(number=number, name=name)] = inputs.schema.field(name).stored(value)
    for name, table in tables.items():
        out[TABLE_KEY.format(number=number, name=name)] = table
    return out


@functools.lru_cache(maxsize=1)
def stored_tables(root: Path) -> dict[Inputs, Stored]:
    """Return the tables the learner kit carries for its public inputs (none in the grader)."""
    import numpy as np

    path = PACKAGE / KIT_DATA_DIR / KNOWN_TABLES
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        found = _by_input({key: data[key] for key in data.files})
    schema = load_rules(root).inputs
    return {
        Inputs(_fields(inputs, schema), schema): Stored(tables)
        for inputs, tables in found.values()
        if set(inputs) == set(schema.names)
    }


def _by_input(arrays: Mapping[str, Any]) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
    """Return the stored arrays by input number: its fields, as stored, and its tables
    (the names INPUT_KEY and TABLE_KEY gave them)."""
    found: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for key, array in arrays.items():
        number, _, rest = key.partition(".")
        if not (number[:1] == "i" and number[1:].isdigit() and rest):
            continue  # no name this module gives
        inputs, tables = found.setdefault(int(number[1:]), ({}, {}))
        if rest.startswith("in."):
            inputs[rest[3:]] = array
        else:
            tables[rest] = array
    return found


def _fields(arrays: Mapping[str, Any], schema: InputSchema) -> dict[str, Any]:
    """Return a stored input's fields as their kinds hold them."""
    return {name: schema.field(name).from_stored(array) for name, array in arrays.items()}


def input_fields(arrays: Mapping[str, Any], schema: InputSchema) -> dict[int, Inputs]:
    """Return the inputs stored among ``arrays`` (a kit's known tables), by number: those
    of ``schema``'s fields (another exercise's cannot be its)."""
    return {
        number: Inputs(_fields(fields, schema), schema)
        for number, (fields, _) in _by_input(arrays).items()
        if fields and set(fields) == set(schema.names)
    }
