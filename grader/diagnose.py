"""Name the learner's mistake by matching a wrong answer against known wrong answers.

Every candidate mistake is recomputed here, in the grader, from the case's inputs: the child
never sees them. A wrong answer that matches none of them gets no hint at all rather than a
guess. Hints are fixed sentences, so on a hidden case they reveal nothing of its data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from grader.compare import Array
from grader.records import Diagnosis

# How close a wrong answer must be to a known mistake to be called that mistake: looser
# than the grading tolerance, so that a learner's own rounding still matches.
MATCH_RTOL = 1e-4
MATCH_ATOL = 1e-4
FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOAT16_EPS = float(np.finfo(np.float16).eps)

HINTS: dict[str, str] = {
    "swapped_sin_cos": "columns 2i and 2i+1 look swapped: column 2i should hold the sine "
    "and 2i+1 the cosine",
    "halves_concatenated": "the sines and cosines look placed in two halves instead of "
    "interleaved: sine in column 2i, cosine in column 2i+1",
    "exponent_i_over_d": "the frequencies look like 1 / 10000 ** (i / d_model): the exponent "
    "should be 2i / d_model, where i is the pair index",
    "exponent_column_index": "the frequencies use the column index where the pair index "
    "belongs: columns 2i and 2i+1 share the frequency 1 / 10000 ** (2i / d_model)",
    "pair_off_by_one": "every frequency is one pair too slow: pair i uses 2i / d_model, "
    "starting from i = 0 (frequency 1)",
    "integer_division": "every pair has frequency 1: the exponent 2i / d_model was computed "
    "with integer division; use true division",
    "wrong_base": "the frequencies use the wrong base: it is 10000, in 1 / 10000 ** (2i / d_model)",
    "angles_in_degrees": "the angles look converted between degrees and radians: sin and cos "
    "take p * frequency as it is, in radians",
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
    "look computed in float32; compute in float64",
    "low_precision_float16": "the values are right to about 3 decimals at best: the table "
    "looks computed in float16; compute in float64",
    "table_capped": "positions from some size on are wrong while smaller ones are right: is "
    "a lookup table of limited length being used?",
    "table_clamped": "different positions got identical rows: are positions past the end of "
    "a lookup table being clamped to its last row?",
}


def named(code: str) -> Diagnosis:
    """Return the diagnosis for ``code``, with its fixed sentence from HINTS."""
    return Diagnosis(code, HINTS[code])


def _table(
    positions: Array,
    d_model: int,
    *,
    base: float = 10000.0,
    exponent: str = "2i/d",
    degrees: bool = False,
) -> Array:
    """Return the encoding with one deliberate change, interleaved sin/cos."""
    pair = np.arange(d_model // 2, dtype=np.float64)
    power = {
        "2i/d": 2 * pair / d_model,
        "i/d": pair / d_model,
        "2(i+1)/d": 2 * (pair + 1) / d_model,
        "2i//d": np.floor(2 * pair / d_model),
    }[exponent]
    angle = positions.reshape(-1, 1) / base**power
    if degrees:
        angle = np.radians(angle)
    out = np.empty((positions.size, d_model))
    out[:, 0::2] = np.sin(angle)
    out[:, 1::2] = np.cos(angle)
    return out


def _swap_pairs(table: Array) -> Array:
    out = np.empty_like(table)
    out[:, 0::2], out[:, 1::2] = table[:, 1::2], table[:, 0::2]
    return out


def _halves(table: Array) -> Array:
    return np.concatenate([table[:, 0::2], table[:, 1::2]], axis=1)


def _column_exponent(p: Array, d: int) -> Array:
    col = np.arange(d, dtype=np.float64)
    angle = p.reshape(-1, 1) / 10000.0 ** (col / d)
    return np.asarray(np.where(col % 2 == 0, np.sin(angle), np.cos(angle)), dtype=np.float64)


def _dedup_keep_order(positions: Array) -> Array:
    _, first = np.unique(positions, return_index=True)
    return positions[np.sort(first)]


Variant = Callable[[Array, int], Array]


def _same(p: Array) -> Array:
    return p


# Same-shape mistakes, most specific first: (code, the position values each row encodes,
# how the table is built from them). Row-wise, so they can be checked on a sample of rows.
VARIANTS: tuple[tuple[str, Callable[[Array], Array], Variant], ...] = (
    ("swapped_sin_cos", _same, lambda q, d: _swap_pairs(_table(q, d))),
    ("halves_concatenated", _same, lambda q, d: _halves(_table(q, d))),
    ("halves_concatenated", _same, lambda q, d: np.roll(_halves(_table(q, d)), d // 2, axis=1)),
    ("exponent_i_over_d", _same, lambda q, d: _table(q, d, exponent="i/d")),
    ("exponent_column_index", _same, _column_exponent),
    ("pair_off_by_one", _same, lambda q, d: _table(q, d, exponent="2(i+1)/d")),
    ("integer_division", _same, lambda q, d: _table(q, d, exponent="2i//d")),
    ("angles_in_degrees", _same, lambda q, d: _table(q, d, degrees=True)),
    ("positions_ignored", np.zeros_like, _table),
    ("row_index_not_position", lambda p: np.arange(p.size, dtype=np.float64), _table),
    ("positions_sorted", np.sort, _table),
    *(("wrong_base", _same, lambda q, d, b=b: _table(q, d, base=b)) for b in (1e3, 1e2, 1e5, 10.0)),
)
# Rows compared per variant: enough to tell the mistakes apart, few enough to stay cheap on
# a 100000-row table.
SAMPLE_ROWS = 64


def _close(got: Array, variant: Array) -> bool:
    return got.shape == variant.shape and bool(
        np.allclose(got, variant, rtol=MATCH_RTOL, atol=MATCH_ATOL)
    )


def diagnose(positions: tuple[int, ...], d_model: int, got: Array, want: Array) -> Diagnosis | None:
    """Return the known mistake ``got`` matches, or None; ``got`` is known to be wrong."""
    p = np.asarray(positions, dtype=np.float64)
    n = p.size
    if got.shape != want.shape:
        return _shape_mistake(p, d_model, got, want)
    if d_model == n and _close(got.T, want):
        return named("transposed")
    rows, variants = _sampled_variants(positions, d_model)
    got_rows, want_rows = got[rows], want[rows]
    for code, variant in variants:
        # A "mistake" that changes nothing on this input (say, the base when d_model is 2)
        # cannot be what went wrong.
        if not _close(variant, want_rows) and _close(got_rows, variant):
            return named(code)
    return _precision_or_cap(p, got, want)


@functools.lru_cache(maxsize=64)
def _sampled_variants(
    positions: tuple[int, ...], d_model: int
) -> tuple[npt.NDArray[np.intp], tuple[tuple[str, Array], ...]]:
    """Return the sampled rows and every known mistake's table on them, once per case.

    A batch diagnoses many submissions on the same cases: computing the wrong tables once
    each keeps the cost of a hint from growing with the class.
    """
    p = np.asarray(positions, dtype=np.float64)
    rows = np.unique(np.linspace(0, p.size - 1, min(p.size, SAMPLE_ROWS)).astype(np.intp))
    tables = tuple((code, make(encoded(p)[rows], d_model)) for code, encoded, make in VARIANTS)
    for _, table in tables:
        table.setflags(write=False)
    return rows, tables


def _shape_mistake(p: Array, d_model: int, got: Array, want: Array) -> Diagnosis | None:
    n = p.size
    if got.shape == (d_model, n):
        return named("transposed")
    if got.ndim == 1 and got.size == want.size and _close(got.reshape(want.shape), want):
        return named("flattened")
    if got.ndim == 2 and got.shape[1] == d_model and got.shape[0] < n:
        for order in (_dedup_keep_order(p), np.unique(p)):
            if _close(got, _table(order, d_model)):
                return named("positions_deduplicated")
    return None


def _within_precision(p: Array, row_err: Array, eps: float, floor: float) -> bool:
    """Return True if every row's error fits a computation carried out with epsilon ``eps``.

    The angle p * frequency carries a relative error of a few eps, so the error of a row can
    grow with its position; small positions must then be nearly exact.
    """
    return bool(np.all(row_err <= 8 * eps * (1 + p) + floor))


def _precision_or_cap(p: Array, got: Array, want: Array) -> Diagnosis | None:
    """Recognise answers right but for their last digits, or right only below some position."""
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want)
    if not np.all(np.isfinite(err)):
        return None
    row_err = err.max(axis=1)
    if _within_precision(p, row_err, FLOAT32_EPS, 1e-6):
        return named("low_precision_float32")
    small = p <= 100
    if (
        small.any()
        and row_err[small].max() > 1e-5
        and _within_precision(p[small], row_err[small], FLOAT16_EPS, 2e-3)
    ):
        return named("low_precision_float16")
    order = np.argsort(p, kind="stable")
    wrong_rows = row_err[order] > 1e-4
    first_wrong = int(np.argmax(wrong_rows))
    # A capped table gets a run of positions right, some of them past 0, then none.
    if wrong_rows.any() and (p[order][:first_wrong] > 0).any() and wrong_rows[first_wrong:].all():
        return named("table_capped")
    distinct = np.unique(p).size
    if distinct > 1 and np.unique(got, axis=0).shape[0] < distinct:
        return named("table_clamped")
    return None
