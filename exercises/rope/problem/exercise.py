"""The rotary position embeddings exercise's public module: the function, its inputs, and
the words the grader uses of it. Shipped in the learner kit: nothing here is secret.

NAME, FUNCTION and ARGUMENTS are read without running this file (literal values only), before
the submission's child starts; the rest is imported once it has.
"""

from grader.problem.schema import Field, Given, InputSchema

# The learner kit is called NAME-kit (a command, a distribution, a package).
NAME = "rope"
FUNCTION = "apply_rope"
ARGUMENTS = ("x", "positions")
# 2: x reaches the learner as a float64 NumPy array (1 gave it as lists of rows).
VERSION = 2

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
            # RoPE turns query and key tensors: its learners write NumPy, and get an array.
            given=Given.ARRAY,
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
# How pictures (--plot) name the answer's axes.
LABELS = ("row (position)", "column (pair i: columns 2i and 2i+1)")
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


# The mistakes named by measurement (measure.py reads them, staff.py confirms them), by
# part: how the columns are paired, the frequencies, the positions' scale, the precision.
# A combination is one code, its parts joined by "+" in this order, and one sentence.
LAYOUT_PARTS = {
    "rotate_half": "you rotated pairs (i, i + d/2), the GPT-NeoX/Llama layout; this exercise "
    "rotates adjacent pairs",
    "partial_rotary": "only the leading columns were rotated and the rest came back unchanged "
    "(a partial rotary, as GPT-NeoX's rotary_pct or GPT-J's rotary_dim): rotate every pair, "
    "adjacent columns (2i, 2i + 1) together, with frequencies over the whole width d",
}
FREQUENCY_PARTS = {
    "wrong_base": "the frequencies use the wrong base: it is 10000, in 10000 ** (-2i / d)",
    "exponent_i_over_d": "the frequencies look like 10000 ** (-i / d) with i the pair index "
    "(the same as base 100): pair i's exponent is -2i / d, with the base 10000",
    "pair_off_by_one": "every frequency is one pair too slow: pair i's exponent is -2i / d, "
    "starting from i = 0 (frequency 1)",
}
SCALE_PARTS = {
    "sign_flipped": "every pair turns the wrong way: the rotation is by +angle, "
    "out[2i] = x[2i] cos - x[2i+1] sin and out[2i+1] = x[2i] sin + x[2i+1] cos",
    "positions_scaled": "every angle is the right one times a constant below 1, as if the "
    "positions were divided (linear position interpolation): turn row k by positions[k] "
    "itself",
}
PRECISION_PARTS = {
    "low_precision_float32": "small positions are right but larger ones drift: the angles "
    "look computed in float32, as in most PyTorch RoPE caches; compute position * frequency "
    "in float64",
}


def _combinations():
    """Yield (code, sentence) for every non-empty combination of at most one part of each kind."""
    import itertools

    kinds = (LAYOUT_PARTS, FREQUENCY_PARTS, SCALE_PARTS, PRECISION_PARTS)
    for chosen in itertools.product(*([None, *kind] for kind in kinds)):
        parts = [(code, kind[code]) for code, kind in zip(chosen, kinds, strict=True) if code]
        if parts:
            yield "+".join(c for c, _ in parts), "; also, ".join(t for _, t in parts)


HINTS = {
    "halves_with_interleaved_angles": "you rotated pairs (i, i + d/2) with the angles "
    "repeated for adjacent columns: rotate adjacent columns (2i, 2i + 1) together, both by "
    "pair i's angle",
    "pairs_with_concatenated_angles": "the pairs are adjacent, but the angles are laid out "
    "as two copies side by side (the cat((freqs, freqs)) cache of GPT-NeoX/Llama): columns "
    "2i and 2i + 1 must both use pair i's angle, so repeat each angle twice in place",
    "swapped_sin_cos": "sine and cosine look swapped: out[2i] = x[2i] cos - x[2i+1] sin, so "
    "that position 0 leaves the row unchanged",
    "row_index_not_position": "each row is rotated by its row number instead of its "
    "position: row k must use the angle of positions[k]",
    "low_precision_float16": "the values are right to about 3 decimals at best: the rotation "
    "looks computed in float16; compute in float64",
    "low_precision_float32_table": "every row is off by about float32's rounding times its "
    "length, whatever its position: the angles are right but the sin/cos table (or x) looks "
    "stored in float32, and its rounding is multiplied by the entries of x; keep the table "
    "in float64",
    **dict(_combinations()),
    "table_precomputed": "is a sin/cos table precomputed for a fixed number of positions (as "
    "GPT-J's max_position_embeddings) indexed past its end? Compute the angles from the "
    "positions given, whatever their size",
}
# Hints an exception earns, each with the exception it goes with.
RAISED_HINTS = {"table_precomputed": "IndexError"}
# A table precomputed for fewer positions than this is no model's: an IndexError on a case
# whose positions all stay below it has some other cause.
TABLE_AT_LEAST = 512


def where(inputs, row, column):
    """Say where a value is: its row's position, its column's pair."""
    return f"row {row} (position {inputs['positions'][row]}), column {column} (pair {column // 2})"


def diagnose(inputs, got, want, known):
    """Return the code of the known mistake that explains ``got`` wholly, or None; or the
    code and the numbers read back, for a mistake named by measurement."""
    from .matching import diagnose as match

    tables, staff = None, None
    if hasattr(known, "known_tables"):
        staff = known  # matching computes its tables on demand, sampled rows first
    elif known is not None:
        tables = dict(known)
    # The grader's inputs are hashed by content: the staff module keeps each case's tables.
    kept = inputs if getattr(type(inputs), "__hash__", None) is not None else None
    return match(inputs["x"], inputs["positions"], got, want, tables, staff, kept)


def diagnose_raised(inputs, exception, message):
    """Return table_precomputed for an IndexError on a case reaching past TABLE_AT_LEAST,
    with the table's length where the (visible) message says it, or None."""
    import re

    largest = max(inputs["positions"])
    if exception != "IndexError" or largest < TABLE_AT_LEAST:
        return None
    size = re.search(r"\bsize (\d+)", message)
    if size is None or not 0 < int(size.group(1)) <= largest:
        return "table_precomputed"
    n = int(size.group(1))
    return (
        "table_precomputed",
        f"the table holds {n} positions (0 to {n - 1}); this case reaches position {largest}",
    )
