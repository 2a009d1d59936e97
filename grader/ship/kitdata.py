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
from grader.problem.layout import KIT_DATA_DIR
from grader.problem.schema import InputSchema, InvalidInputs, check_inputs
from grader.ship.held import PublicTable

if TYPE_CHECKING:
    from grader.compare import Array


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


def written_inputs(bundle: Path, texts: Mapping[Path, str]) -> list[PublicInput]:
    """Return every list or range of whole numbers written in the kit's text files.

    The statement, the starter, a comment in examples.yaml or a sentence of a probe's why
    can carry a hidden case's list as well as a probe can.
    """
    found: list[PublicInput] = []
    for where, text in _authored(bundle, texts):
        for match in _LIST.finditer(text):
            numbers = tuple(int(n) for n in re.findall(r"-?\d+", match[0]))
            found.append(PublicInput(where, {WRITTEN: numbers}, written=True))
        for match in _RANGE.finditer(text):
            args = [int(a) for a in match.groups() if a is not None]
            if 0 not in args[2:]:
                found.append(PublicInput(where, {WRITTEN: range(*args)}, written=True))
    return found


def _authored(bundle: Path, texts: Mapping[Path, str]) -> list[tuple[str, str]]:
    """Return (name, text) of each text file of the kit that the course wrote."""
    found = []
    for path, text in texts.items():
        parts = path.relative_to(bundle).parts
        # The grader's own code and templates (the kit's package) are the project's, not the
        # course's: what an author writes is the problem's files and the kit's data.
        ours = (bundle / parts[0] / "__init__.py").is_file() and KIT_DATA_DIR not in parts
        if not ours and path.suffix not in (".npz", ".npy", ".png"):
            found.append((str(path.relative_to(bundle)), text))
    return found


# A row of numbers, a decimal point among them, as prose, Python, JSON or YAML write it.
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(rf"\[\s*{_NUMBER}(?:\s*,\s*{_NUMBER})*\s*,?\s*\]")


def written_tables(bundle: Path, texts: Mapping[Path, str]) -> list[PublicTable]:
    """Return the rows of numbers written in the kit's text files, each file's as a table.

    A hidden table pasted into the statement, a comment or a helper module, in any layout
    (YAML rows, nested Python lists, one flat list), is as public as a probe. Rows of whole
    numbers only are lists, which written_inputs reads.
    """
    import numpy as np

    found = []
    for where, text in _authored(bundle, texts):
        for match in _ROW.finditer(text):
            if "." in match[0]:
                numbers = re.findall(_NUMBER, match[0])
                found.append(PublicTable(where, np.array([numbers], dtype=np.float64)))
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
            if DATA_SUFFIXES[path.suffix] == "yaml":
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
    return [
        PublicTable(
            f"{name} ({path}.{field.name})" if path else f"{name} ({field.name})",
            values[field.name],
        )
        for field in schema.fields
        if field.secrecy is Secrecy.ROWS and not isinstance(node[field.name], list)
    ]


def _numpy_arrays(path: Path) -> dict[str, Any]:
    """Return a numpy file's arrays by name (one array: named "")."""
    import numpy as np

    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.ndarray):
        return {"": loaded}
    with loaded:
        return {key: loaded[key] for key in loaded.files}


def _numpy_data(
    arrays: Mapping[str, Any],
    name: str,
    schema: InputSchema,
    inputs: list[PublicInput],
    tables: list[PublicTable],
) -> None:
    """Collect the tables (float arrays) and the stored inputs of a numpy file (the known
    tables' file names each input's fields, see verdict/known.py)."""
    import numpy as np

    from grader.verdict.known import input_fields

    for key, array in arrays.items():
        where = f"{name} ({key})" if key else name
        # A list of floats is a table of one row, as in YAML.
        if array.dtype.kind == "f" and array.ndim >= 1 and array.shape[-1]:
            rows = array.reshape(-1, array.shape[-1]).astype(np.float64)
            tables.append(PublicTable(where, rows))
    for number, values in input_fields(arrays, schema).items():
        inputs.append(PublicInput(f"{name} (input {number})", values))
