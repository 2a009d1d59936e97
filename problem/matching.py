"""Name the learner's mistake by matching a wrong answer against known wrong answers.

Public: the learner kit ships it (it evaluates no formula). The known wrong tables come
from the staff module (problem/staff.py), computed from the case's inputs in the grader
(the child never sees them), or, in the learner kit, from the tables stored at bundle time
for its public inputs. A hint is given only when one known mistake explains the whole
answer: within MATCH_TOL on every row, or within the error of float32 (float16) arithmetic
for the precision mistakes. Where none does and the staff module is at hand, measure.py
reads back each pair's rate and staff.py's confirm names a proposal only when its
regenerated table matches. Anything else gets no hint at all rather than a guess. Hints are
fixed sentences, so on a hidden case they reveal nothing of its data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

# How close a wrong answer must be to a known mistake to be called that mistake, for values
# in [-1, 1]: looser than the grading tolerance, so that a learner's own rounding matches.
MATCH_TOL = 2e-4
FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOAT16_EPS = float(np.finfo(np.float16).eps)
# A precision explains a row if its error is within a few eps of the angle p * frequency.
# Where that allowance passes this bound, any value would fit: such rows prove nothing, so
# a precision is named only when some row is tighter.
TELLING_SLACK = 0.01


Index = npt.NDArray[np.intp]
# Angles in float32 keep each pair's sine and cosine on the unit circle within KEPT_EPS eps
# of float32; on each row where the table regenerated with float32 angles is off by more
# than GROWN_EPS eps, an answer in float32 angles is off by at least 1/SHORT_BY of that,
# summed over those rows (row by row, another order of float32 products can fall below).
KEPT_EPS = 4.0
GROWN_EPS = 8.0
SHORT_BY = 6.0
# Rows compared per known mistake before the whole table is checked: enough to rule most
# of them out, few enough to stay cheap on a 100000-row table.
SAMPLE_ROWS = 16


@dataclass(frozen=True)
class _Known:
    """The known mistakes of one input: their tables on sampled rows, and on demand in full."""

    rows: Index
    codes: tuple[str, ...]
    sampled: Array  # (mistake, sampled row, column)
    apart: Array  # (mistake, sampled row): how far each mistake is from the right table
    full: Callable[[int], Array]
    reshaped: Callable[[], tuple[tuple[str, Array], ...]]


def diagnose(
    positions: tuple[int, ...], d_model: int, got: Array, want: Array, source: Any
) -> str | tuple[str, str] | None:
    """Return the code of the known mistake ``got`` matches, or None; ``got`` is known to
    be wrong. ``source``: where the known mistakes come from (see _known)."""
    p = _as_array(positions)
    if got.shape != want.shape:
        return _shape_mistake(positions, d_model, got, want, source)
    if d_model == p.size and _close(got.T, want):
        return "transposed"
    known = _known(positions, d_model, source)
    if known is not None:
        code = _known_mistake(known, p, got)
        if code is not None:
            return code
    regenerate = getattr(source, "float32_table", None)
    float32 = None if regenerate is None else functools.partial(regenerate, positions, d_model)
    code = _from_right_table(p, got, want, float32)
    if code is not None or not hasattr(source, "confirm"):
        return code
    # Named by measurement: the layout, base and position scale the answer's angles agree
    # on, confirmed by the staff module's regenerated table (a learner kit has no staff
    # module, and names none).
    from .measure import read

    return source.confirm(positions, d_model, got, want, read(p, got))  # type: ignore[no-any-return]


def _close(got: Array, table: Array, slack: float | Array = MATCH_TOL) -> bool:
    """Return True if every row of ``got`` is within ``slack`` (one per row) of ``table``."""
    if got.shape != table.shape:
        return False
    with np.errstate(invalid="ignore"):
        diff = np.subtract(got, table)
        return bool(np.all(np.abs(diff, out=diff).max(axis=-1) <= slack))


def _float32_slack(p: Array) -> Array:
    """Return the error per row that float32 arithmetic can explain, on top of MATCH_TOL."""
    return 8 * FLOAT32_EPS * (1 + np.abs(p)) + MATCH_TOL


def _known_mistake(known: _Known, p: Array, got: Array) -> str | None:
    """Return the code of the known mistake that explains every row of ``got``, if one does."""
    rows = got[known.rows]
    loosest = _float32_slack(p[known.rows])
    # One row first: most answers that match no known mistake are told by a single row.
    middle = rows.shape[0] // 2
    with np.errstate(invalid="ignore"):
        near = np.abs(known.sampled[:, middle] - rows[middle]).max(axis=1) <= loosest[middle]
    if not near.any():
        return None
    with np.errstate(invalid="ignore"):
        err = np.full(known.apart.shape, np.inf)
        err[near] = np.abs(known.sampled[near] - rows).max(axis=2)
    # As computed, then in float32 (the layouts people adapt often compute in float32).
    tries: tuple[tuple[float | Array, float | Array], ...] = (
        (MATCH_TOL, MATCH_TOL),
        (loosest, _float32_slack(p)),
    )
    for slack, full_slack in tries:
        # A mistake that changes nothing on this input (say, the base when d_model is 2)
        # cannot be what went wrong.
        fits = np.all(err <= slack, axis=1) & np.any(known.apart > 2 * slack, axis=1)
        for k in np.flatnonzero(fits):
            if _close(got, known.full(int(k)), full_slack):
                return known.codes[k]
    return None


@functools.lru_cache(maxsize=64)
def _as_array(positions: tuple[int, ...]) -> Array:
    """Return the positions as floats, once per input: converting a long tuple takes a while."""
    p = np.asarray(positions, dtype=np.float64)
    p.setflags(write=False)
    return p


def _sample(positions: tuple[int, ...]) -> Index:
    """Return rows spread over the table, with those of the smallest and largest position."""
    p = np.asarray(positions)
    spread = np.linspace(0, p.size - 1, min(p.size, SAMPLE_ROWS)).astype(np.intp)
    return np.unique(np.concatenate([spread, [np.argmin(p), np.argmax(p)]]).astype(np.intp))


@functools.lru_cache(maxsize=64)
def _known(positions: tuple[int, ...], d_model: int, source: Any) -> _Known | None:
    """Return the known mistakes of one input, once per input.

    ``source`` is the staff module, which computes them, or the tables the learner kit
    stored for this input, or None (a kit's input it stored nothing for). A batch
    diagnoses many submissions on the same cases: computing the wrong tables once each
    keeps the cost of a hint from growing with the class.
    """
    if source is None:
        return None
    rows = _sample(positions)
    if isinstance(source, Mapping):
        tables = source["tables"]
        codes = tuple(str(c) for c in source["codes"])
        sampled = tables[:, rows]
        right_rows = source["right"][rows]
        full: Callable[[int], Array] = tables.__getitem__
        reshaped = tuple(
            (str(code), source[f"reshaped{j}"]) for j, code in enumerate(source["reshaped_codes"])
        )
        more: Callable[[], tuple[tuple[str, Array], ...]] = lambda: reshaped  # noqa: E731
    else:
        staff = source
        codes = staff.CODES
        sampled = staff.row_tables(positions, d_model, rows)
        right_rows = staff.right_table(positions, d_model, rows)

        def full(k: int) -> Array:
            return _full_table(positions, d_model, k, staff)

        def more() -> tuple[tuple[str, Array], ...]:
            return staff.reshaped_tables(positions, d_model)  # type: ignore[no-any-return]

    sampled.setflags(write=False)
    apart = np.abs(sampled - right_rows).max(axis=2)
    return _Known(rows, codes, sampled, apart, full, more)


# Every case's table of every known mistake a class makes, kept for the batch: a few
# dozen megabytes at most, where a smaller cache computed the same tables again and again.
@functools.lru_cache(maxsize=256)
def _full_table(positions: tuple[int, ...], d_model: int, k: int, staff: Any) -> Array:
    table = staff.variant_table(positions, d_model, k)
    table.setflags(write=False)
    return table  # type: ignore[no-any-return]


def _shape_mistake(
    positions: tuple[int, ...], d_model: int, got: Array, want: Array, source: Any
) -> str | None:
    n = len(positions)
    if got.shape == (d_model, n):
        return "transposed"
    if got.ndim == 1 and got.size == want.size and _close(got.reshape(want.shape), want):
        return "flattened"
    if got.ndim == 2 and got.shape[1] == d_model and got.shape[0] < n:
        known = _known(positions, d_model, source)
        for code, table in known.reshaped() if known is not None else ():
            if _close(got, table):
                return code
    return None


def _within_precision(p: Array, row_err: Array, eps: float, floor: float) -> bool:
    """Return True if every row's error fits a computation carried out with epsilon ``eps``.

    The angle p * frequency carries a relative error of a few eps, so the error of a row can
    grow with its position; small positions must then be nearly exact, and some row must be
    small enough for its allowance to tell anything.
    """
    slack = 8 * eps * (1 + p) + floor
    return bool(np.all(row_err <= slack) and np.any(slack <= TELLING_SLACK))


def _as_float32_angles(
    got: Array, want: Array, row_err: Array, float32: Callable[[], Array] | None
) -> bool:
    """Return True if ``got`` is off ``want`` as angles computed in float32 make it: every
    pair's sine and cosine stay on the unit circle within KEPT_EPS eps, and (where the staff
    module regenerates the table with float32 angles, ``float32``) on each row where that
    table is off by more than GROWN_EPS eps, ``got`` is off by at least 1/SHORT_BY as much,
    summed over those rows: the error grows with the position as float32's does (a lower bound; the upper one is
    _within_precision's). A sine lookup table, noise, a bfloat16 table fail it."""
    with np.errstate(invalid="ignore"):
        moved = np.abs(np.hypot(got[:, 0::2], got[:, 1::2]) - 1.0)
    if not np.all(moved <= KEPT_EPS * FLOAT32_EPS):
        return False
    if float32 is None:
        return True
    grown = np.abs(float32() - want).max(axis=1)
    telling = grown > GROWN_EPS * FLOAT32_EPS
    return bool(telling.any() and SHORT_BY * row_err[telling].sum() >= grown[telling].sum())


def _from_right_table(
    p: Array, got: Array, want: Array, float32: Callable[[], Array] | None = None
) -> str | None:
    """Recognise answers right but for their precision, a factor, or past some position.
    ``float32`` returns the right table with float32 angles (the staff module's), if any."""
    # One temporary, reused: on a large table each fresh array costs more than the arithmetic.
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.subtract(got, want)
        row_err = np.abs(err, out=err).max(axis=1)
    if not np.all(np.isfinite(row_err)):
        return None
    if _within_precision(p, row_err, FLOAT32_EPS, 1e-6) and _as_float32_angles(
        got, want, row_err, float32
    ):
        return "low_precision_float32"
    if _within_precision(p, row_err, FLOAT16_EPS, 2 * FLOAT16_EPS):
        # A table computed in float16 holds float16 values only, whatever it was returned as.
        with np.errstate(over="ignore"):
            if np.array_equal(got.astype(np.float16), got):
                return "low_precision_float16"
    # Plain ufuncs, not np.vdot: waking BLAS threads costs more than the sums themselves.
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = float(np.multiply(got, want, out=err).sum() / np.square(want, out=err).sum())
    if (
        # A factor that overflowed (a table of 1e308) would get an infinite slack, which
        # any table fits: it explains nothing.
        math.isfinite(scale)
        and abs(scale) > 10 * MATCH_TOL
        and abs(scale - 1) > MATCH_TOL
        and _close(got, scale * want, MATCH_TOL * max(1.0, abs(scale)))
    ):
        return "constant_scale"
    return _past_a_table(p, got, row_err)


def _past_a_table(p: Array, got: Array, row_err: Array) -> str | None:
    """Recognise a lookup table too short: right up to a position, then zeros or one row."""
    order = np.argsort(p, kind="stable")
    wrong = row_err[order] > MATCH_TOL
    first = int(np.argmax(wrong))
    # A run of positions right, some of them past 0, then none.
    if not wrong.any() or not (p[order][:first] > 0).any() or not wrong[first:].all():
        return None
    past = got[order[first:]]
    if not past.any():
        return "table_capped"
    one_row = past[0]
    pairs = one_row[0::2] ** 2 + one_row[1::2] ** 2
    # The last row of a table encodes a position at least as large as every right one: the
    # repeated row cannot be the encoding of a smaller position seen right, nor of position
    # 0 ([0, 1, 0, 1, ...], whose row every answer knows).
    right_p = p[order[:first]]
    same = np.abs(got[order[:first]] - one_row).max(axis=1) <= MATCH_TOL
    zero_row = np.zeros_like(one_row)
    zero_row[1::2] = 1.0
    if (
        np.unique(p[order[first:]]).size > 1
        and bool(np.all(past == one_row))
        and bool(np.all(np.abs(pairs - 1) <= MATCH_TOL))
        and bool(np.all(right_p[same] == right_p.max()))
        and not _close(one_row, zero_row)
    ):
        return "table_clamped"
    return None
