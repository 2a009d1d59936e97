"""The exercise's public module: the function a learner writes, its inputs, and the
words the grader uses of it. Shipped in the learner kit: nothing here is secret.

NAME, FUNCTION and ARGUMENTS are read without running this file (literal values only), before
the submission's child starts; the rest is imported once it has.
"""

from grader.problem.schema import Field, InputSchema

# The learner kit is called NAME-kit (a command, a distribution, a package).
NAME = "sinusoidal-positions"
FUNCTION = "sinusoidal_positions"
ARGUMENTS = ("positions", "d_model")

# The bounds are where every correct solution of the corpus still agrees with the
# reference within the default tolerance, and where one case stays cheap to grade: at
# position 10^9 the largest disagreement of any correct variant, over every even d_model
# up to 8192, is 0.36 of the tolerance (measured; float64 angles lose about 1.2e-7 per ulp
# there), and at 10^10 it is 1.9 times the tolerance. See docs/authoring-bounds.md. The
# statement's "Domain" paragraph states the same numbers (a test holds them equal).
MAX_POSITION = 10**9
MAX_ROWS = 200_000
MAX_D_MODEL = 8192
MAX_ELEMENTS = 4_000_000

INPUTS = InputSchema(
    fields=(
        Field(
            "positions",
            "integer list",
            low=0,
            high=MAX_POSITION,
            items=(1, MAX_ROWS),
            ranges=True,
            written="a list of integers, or {range: [start, stop(, step)]} as Python's range",
        ),
        Field("d_model", "integer", low=2, high=MAX_D_MODEL, step=2, written="an even integer"),
    ),
    max_values=MAX_ELEMENTS,
    shape=lambda v: (len(v["positions"]), v["d_model"]),
)

# Each row of the answer encodes one entry of positions, whatever the others are.
ROWS = "positions"
ROW_INPUTS = ("positions",)
# How pictures (--plot) name the table's axes.
LABELS = ("row (position)", "column (2i = sin, 2i+1 = cos of pair i)")
# The kit's code must compute no sine or cosine: that would be the answer.
FORMULA = r"\b(?:sin|cos)\s*\("

# The exercise's wording of the vocabulary's sentences about the answer's shape.
SENTENCES = {
    "shape_flat": "your result is a flat vector: build a 2-D table, one row per position",
    "shape_ndim": "your result is not 2-dimensional: the answer is a 2-D table",
    "shape_transposed": "looks transposed: rows must be positions and columns the d_model features",
    "shape_rows": "wrong number of rows: there must be one row per entry of positions, "
    "repeats included",
    "shape_cols": "wrong number of columns: there must be exactly d_model columns",
    "ragged": "returned rows of different lengths: every row must have d_model values",
}

HINTS = {
    "swapped_sin_cos": "columns 2i and 2i+1 look swapped: column 2i should hold the sine "
    "and 2i+1 the cosine",
    "tensor2tensor_halves": "this is the tensor2tensor/fairseq layout (also whisper's and "
    "diffusers'): sines in the first half, cosines in the second, frequencies "
    "1 / 10000 ** (k / (d_model/2 - 1)). The exercise interleaves them instead: sine in column "
    "2i, cosine in column 2i+1, frequency 1 / 10000 ** (2i / d_model)",
    "tensor2tensor_halves_cos_first": "this is the halves layout with the cosine half first "
    "(diffusers' timestep embedding with flip_sin_to_cos=True), frequencies "
    "1 / 10000 ** (k / (d_model/2 - 1)). The exercise interleaves them instead: sine in column "
    "2i, cosine in column 2i+1, frequency 1 / 10000 ** (2i / d_model)",
    "halves_concatenated": "the sines and cosines are placed in two halves (the layout of "
    "tensor2tensor, fairseq and diffusers) instead of interleaved: sine in column 2i, cosine "
    "in column 2i+1",
    "exponent_i_over_d": "the frequencies look like 1 / 10000 ** (i / d_model): the exponent "
    "should be 2i / d_model, where i is the pair index",
    "exponent_column_index": "the frequencies use the column index where the pair index "
    "belongs: columns 2i and 2i+1 share the frequency 1 / 10000 ** (2i / d_model)",
    "column_index_doubled": "column j uses 1 / 10000 ** (2j / d_model) with j the column, as "
    "in a well-known early PyTorch implementation: j is the pair index there. Columns 2i and "
    "2i+1 share the frequency 1 / 10000 ** (2i / d_model)",
    "exponent_4i_over_d": "pair i uses 1 / 10000 ** (4i / d_model): the index was doubled "
    "twice (a loop over the even columns 0, 2, 4, ... that multiplies by 2 again). Pair i's "
    "exponent is 2i / d_model",
    "pair_off_by_one": "every frequency is one pair too slow: pair i uses 2i / d_model, "
    "starting from i = 0 (frequency 1)",
    "integer_division": "every pair has frequency 1: the exponent 2i / d_model was computed "
    "with integer division; use true division",
    "wrong_base": "the frequencies use the wrong base: it is 10000, in 1 / 10000 ** (2i / d_model)",
    "angles_in_degrees": "the angles look converted between degrees and radians: sin and cos "
    "take p * frequency as it is, in radians",
    "padding_row": "every row is right except those of position 0, which are all zeros: a "
    "padding index was zeroed (fairseq and others do so when padding_idx is set). Here "
    "position 0 encodes as [0, 1, 0, 1, ...] like any other",
    "constant_scale": "the table is right up to one constant factor (such as d_model ** -0.5, "
    "which some models apply to embeddings): return the encodings unscaled",
    "positions_ignored": "every row holds the encoding of position 0: the position values "
    "are not used",
    "row_index_not_position": "each row encodes its row number instead of the position "
    "value: row k must encode positions[k]",
    "positions_sorted": "the rows come out in sorted order: keep the positions in the order "
    "given, repeats included",
    "positions_deduplicated": "repeated positions were dropped: return one row per entry of "
    "positions, repeats included",
    "transposed": "the table looks transposed: one row per position, one column per feature, "
    "shape (len(positions), d_model)",
    "flattened": "the values are right but flattened into one vector: return a 2-D table of "
    "shape (len(positions), d_model)",
    "low_precision_float32": "small positions are right but larger ones drift: the angles "
    "look computed in float32, as in the popular PyTorch and Keras snippets; compute in "
    "float64",
    "low_precision_float16": "the values are right to about 3 decimals at best: the table "
    "looks computed in float16; compute in float64",
    "table_capped": "positions up to some size are right and every larger one is all zeros: "
    "is a lookup table of limited length being used?",
    "table_clamped": "positions up to some size are right and larger ones all got the same "
    "row: are positions past the end of a lookup table being clamped to its last row?",
}

# The combinations named by measurement (problem/measure.py reads them, staff.py confirms
# them): a halves layout, the base and a scale on the positions, one of each kind at most,
# one code (parts joined by "+" in this order) and one sentence.
POSITIONS_SCALED = (
    "every angle is the right one times a constant below 1, as if the positions were "
    "divided (linear position interpolation): encode positions[k] itself"
)
HINTS["positions_scaled"] = POSITIONS_SCALED
for _layout in ("halves_concatenated", "tensor2tensor_halves", "tensor2tensor_halves_cos_first"):
    for _parts in (("wrong_base",), ("positions_scaled",), ("wrong_base", "positions_scaled")):
        HINTS["+".join((_layout, *_parts))] = "; also, ".join(HINTS[c] for c in (_layout, *_parts))
HINTS["wrong_base+positions_scaled"] = "; also, ".join(
    HINTS[c] for c in ("wrong_base", "positions_scaled")
)

# The hints a table of the wrong shape can earn, and those one of the right shape can: a
# square table can be transposed and keep its shape.
SHAPE_HINTS = frozenset({"transposed", "flattened", "positions_deduplicated"})
ANSWER_HINTS = frozenset(HINTS) - {"flattened", "positions_deduplicated"}


def where(inputs, row, column):
    """Say where a value of the table is: its row's position, its column's pair."""
    kind = "sin" if column % 2 == 0 else "cos"
    return (
        f"row {row} (position {inputs['positions'][row]}), "
        f"column {column} (pair {column // 2} {kind})"
    )


def same_rows(public, hidden):
    """Whether a table of ``public``'s width holds the rows of one of ``hidden``'s: pair
    k * i at k * d has the frequency of pair i at d."""
    return public["d_model"] % hidden["d_model"] == 0


def diagnose(inputs, got, want, known):
    """Return the code of the known mistake that explains ``got`` wholly, or None."""
    from .matching import diagnose as match

    return match(tuple(inputs["positions"]), int(inputs["d_model"]), got, want, known)
