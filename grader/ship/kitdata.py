"""The learner kit's files read as what they mean: the inputs and tables its data files
hold, and the lists of whole numbers its text holds. The kit check (kitcheck.py) compares
them with every exercise's hidden cases."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.errors import GraderError, Refused
from grader.problem.kinds import Secrecy
from grader.problem.schema import InputSchema, InvalidInputs, check_inputs
from grader.ship.held import PublicTable
from grader.ship.kittext import FileKind, authored, kind_of, numbers, readable, whole_lists

if TYPE_CHECKING:
    from grader.compare import Array


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


def written_inputs(bundle: Path, texts: Mapping[Path, str]) -> list[PublicInput]:
    """Return every list or range of whole numbers written in the kit's course texts.

    The statement, the starter, a comment in examples.yaml or a sentence of a probe's why
    can carry a hidden case's list as well as a probe can.
    """
    found: list[PublicInput] = []
    for path in authored(bundle, list(texts)):
        where, text = str(path.relative_to(bundle)), texts[path]
        for match in _LIST.finditer(text):
            numbers = tuple(int(n) for n in re.findall(r"-?\d+", match[0]))
            found.append(PublicInput(where, {WRITTEN: numbers}, written=True))
        for numbers in whole_lists(text):
            found.append(PublicInput(where, {WRITTEN: numbers}, written=True))
        for match in _RANGE.finditer(text):
            args = [int(a) for a in match.groups() if a is not None]
            if 0 not in args[2:]:
                found.append(PublicInput(where, {WRITTEN: range(*args)}, written=True))
    return found


class Data(NamedTuple):
    """One data file of the kit, read: its name, and its YAML document or numpy arrays."""

    name: str
    document: object = None
    arrays: Mapping[str, Any] | None = None


def read_data(bundle: Path, files: Sequence[Path]) -> list[Data]:
    """Read each data file of the kit once; GraderError for one that cannot be read."""
    from grader.problem.yamlsafe import load_file

    found = []
    for path in files:
        name = str(path.relative_to(bundle))
        try:
            if kind_of(path) is FileKind.DATA:
                found.append(Data(name, document=load_file(path).data))
            else:
                found.append(Data(name, arrays=_numpy_arrays(path)))
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
    return found


def public_data(
    data: Sequence[Data], schema: InputSchema
) -> tuple[list[PublicInput], list[PublicTable]]:
    """Return every input (as ``schema`` has them) and table that the kit's data holds."""
    inputs: list[PublicInput] = []
    tables: list[PublicTable] = []
    for item in data:
        if item.arrays is None:
            _walk(item.document, item.name, "", schema, inputs, tables)
        else:
            _numpy_data(item.arrays, item.name, schema, inputs, tables)
    return inputs, tables


def _numbers(node: list[object]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in node)


def _yaml_table(node: list[object]) -> Array | None:
    """Return a list of equally long lists of numbers as a table, and a list of numbers
    with a float among them as a table of one row; else None. (A list of whole numbers
    only is what a list input is: the inputs' checks compare those.)"""
    import numpy as np

    if node and _numbers(node):
        floats = any(isinstance(v, float) for v in node)
        return np.array([node], dtype=np.float64) if floats else None
    rows = [row for row in node if isinstance(row, list)]
    if not rows or len(rows) != len(node) or len({len(row) for row in rows}) != 1:
        return None
    numbers = all(_numbers(row) for row in rows)
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
                tables += _generated_tables(node, values, name, path, schema)
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


def _generated_tables(
    node: Mapping[object, object],
    values: Mapping[str, Any],
    name: str,
    path: str,
    schema: InputSchema,
) -> list[PublicTable]:
    """Return the tables an input generates (written as a seed, not as rows): public too."""
    found = []
    for field in schema.fields:
        raw = node[field.name]
        if field.secrecy is Secrecy.ROWS and isinstance(raw, dict):
            where = f"{name} ({path}.{field.name})" if path else f"{name} ({field.name})"
            seed = raw.get("seed")
            seed = seed if isinstance(seed, int) else None
            found.append(PublicTable(where, values[field.name], seed))
    return found


def _numpy_arrays(path: Path) -> dict[str, Any]:
    """Return a numpy file's arrays by name (one array: named "")."""
    import numpy as np

    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.ndarray):
        return {"": loaded}
    with loaded:
        return {key: loaded[key] for key in loaded.files}


def _numeric(array: Any) -> Array | None:
    """Return a numpy array's numbers as float64s: a complex value as its two parts side by
    side, a structured one's fields side by side, text as the numbers it writes."""
    import numpy as np
    from numpy.lib import recfunctions

    if array.dtype.names:
        try:
            parts: Array = recfunctions.structured_to_unstructured(array, dtype=np.float64)
            return parts
        except (TypeError, ValueError):
            return None
    if array.dtype.kind == "c":
        parts = np.stack([array.real, array.imag], axis=-1).astype(np.float64)
        return parts if array.ndim <= 1 else parts.reshape(*array.shape[:-1], -1)
    if array.dtype.kind in "fiu":
        values: Array = array.astype(np.float64)
        return values
    if array.dtype.kind in "US":
        text = " ".join(str(v) for v in array.reshape(-1).tolist())
        return np.array(numbers(readable(text)), dtype=np.float64)
    return None


def _numpy_data(
    arrays: Mapping[str, Any],
    name: str,
    schema: InputSchema,
    inputs: list[PublicInput],
    tables: list[PublicTable],
) -> None:
    """Collect the tables (float arrays) and the stored inputs of a numpy file (the known
    tables' file names each input's fields, see verdict/known.py)."""

    from grader.verdict.known import input_fields

    for key, array in arrays.items():
        where = f"{name} ({key})" if key else name
        # A list of numbers is a table of one row, as in YAML.
        rows = _numeric(array)
        if rows is not None and rows.ndim >= 1 and rows.shape[-1]:
            tables.append(PublicTable(where, rows.reshape(-1, rows.shape[-1])))
    for number, values in input_fields(arrays, schema).items():
        inputs.append(PublicInput(f"{name} (input {number})", values))
