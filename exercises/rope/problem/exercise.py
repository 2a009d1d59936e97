"""The rotary position embeddings exercise's public module: the function, its inputs, and
the words the grader uses of it. Shipped in the learner kit: nothing here is secret.

FUNCTION and ARGUMENTS are read without running this file (literal values only), before
the submission's child starts; the rest is imported once it has.
"""

from grader.problem.schema import Field, InputSchema

FUNCTION = "apply_rope"
ARGUMENTS = ("x", "positions")

MAX_ROWS = 4096
MAX_WIDTH = 4096
MAX_VALUES = 1_000_000
MAX_POSITION = 10**6
# An entry of x times a position's angle stays where float64 keeps the tolerance: at 10^3
# and 10^6, two correct computations differ by about 2e-7 (at 10^6 entries they differed
# by 1.6e-4, past it).
MAX_ENTRY = 1000.0


def _one_per_row(values):
    rows = values["x"].shape[0]
    if len(values["positions"]) != rows:
        return f"positions must hold one entry per row of x: x has {rows} rows"
    return None


INPUTS = InputSchema(
    fields=(
        Field(
            "x",
            "float table",
            low=-MAX_ENTRY,
            high=MAX_ENTRY,
            items=(1, MAX_ROWS),
            width=(2, MAX_WIDTH),
            width_step=2,
            cells=MAX_VALUES,
            seeded=True,
            written="a list of rows of numbers, or {seed: S, shape: [rows, columns]}",
        ),
        Field(
            "positions",
            "integer list",
            low=0,
            high=MAX_POSITION,
            items=(1, MAX_ROWS),
            ranges=True,
            written="a list of integers, or {range: [start, stop(, step)]} as Python's range",
        ),
    ),
    max_values=MAX_VALUES,
    shape=lambda v: v["x"].shape,
    rule=_one_per_row,
)

# Each row of the answer rotates its own row of x by its own position.
ROWS = "positions"
ROW_INPUTS = ("x", "positions")
# The kit's code must compute no sine or cosine: that would be the answer.
FORMULA = r"\b(?:sin|cos)\s*\("

SENTENCES = {
    "shape_flat": "your result is a flat vector: return one row per row of x",
    "shape_ndim": "your result is not 2-dimensional: the answer has the shape of x",
    "shape_transposed": "looks transposed: the answer has the shape of x, one row per row",
    "shape_rows": "wrong number of rows: there must be one row per row of x",
    "shape_cols": "wrong number of columns: each row keeps the width of x",
    "ragged": "returned rows of different lengths: every row has the width of x",
}


def _hints():
    from .matching import HINTS

    return HINTS


HINTS = _hints()


def where(inputs, row, column):
    """Say where a value is: its row's position, its column's pair."""
    return (
        f"row {row} (position {inputs['positions'][row]}), "
        f"column {column} (pair {column // 2})"
    )


def diagnose(inputs, got, want, known):
    """Return the code of the known mistake that explains ``got`` wholly, or None."""
    from .matching import diagnose as match

    tables = None
    if hasattr(known, "known_tables"):
        import numpy as np

        positions = np.asarray(inputs["positions"], dtype=np.float64)
        tables = known.known_tables(np.asarray(inputs["x"]), positions)
    elif known is not None:
        tables = dict(known)
    return match(inputs["x"], inputs["positions"], got, want, tables)
