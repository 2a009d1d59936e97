"""Name the learner's mistake: against known wrong answers first, then by measurement.

This module ships to learners, so it never evaluates the formula. The known wrong tables
(the mistakes that are no rotation of a pair by a position's angle, and a few that are)
come from staff.py (staff only), computed from the case's inputs by the grader, sampled
rows first, or from the tables a learner kit stored. A code is returned only when one
known mistake explains the whole answer: within MATCH_TOL on every value (as computed in
float64, or with the error of float32 arithmetic on top), or, for the precision mistakes,
within the error their arithmetic makes, told apart by how it grows with the position.
Where the staff module is at hand, measure.py then reads back what the answer did and
staff.py's confirm names it only when one proposal's regenerated table matches. Anything
else gets no hint rather than a guess. Hints are fixed sentences, so on a hidden case they
reveal nothing of its data; what was read is said on visible cases only.
"""

from __future__ import annotations

import numpy as np

# How close a wrong answer must be to a known mistake to be called that mistake, on every
# value: looser than the grading tolerance, so that a learner's own rounding still matches.
# (Times the length of the row's longest pair when that is below 1.)
MATCH_TOL = 2e-4
FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOAT16_EPS = float(np.finfo(np.float16).eps)
# The angle p * frequency carries a relative error of a few eps, so a row can be off by
# ANGLE_EPS * eps * (1 + p) times the length of its longest pair, plus FLOOR_EPS * eps for
# the products and sums. A row whose allowance passes TELLING_SLACK (relative to its
# length) would accept nearly any value: such rows prove nothing, so a precision is named
# only when some row is tighter.
ANGLE_EPS = 8.0
FLOOR_EPS = 4.0
TELLING_SLACK = 0.02
# float32 must be told apart from float16 arithmetic too (a float16 cos/sin cache applied in
# float64, say), whose error is a few 1e-4 of the length, and from small noise: some row
# must be much tighter than that (positions up to about 30).
TELLING_FLOAT32 = 3e-5
# A sin/cos table rounded to float32 (or x rounded so) leaves every row off by at most
# this many eps times its length, whatever the position: an error flat in the position.
FLAT_EPS = 4.0
# A table regenerated in the arithmetic an answer used is this close to it (eps of float32
# times the row's length: the order of the products, or a cosine taken in float32), and
# the other arithmetic APART times farther.
REGENERATED_EPS = 2.0
APART = 4.0
# Angles in float32 turn each pair by a slightly wrong angle and keep its length within the
# rounding of the products: KEPT_EPS eps of float32 times the row's length. Noise, and a
# float16 or bfloat16 cos/sin cache, change lengths far more.
KEPT_EPS = 4.0
# On each row where the table regenerated with float32 angles is off the exact one by more
# than GROWN_EPS eps (times the row's length), an answer in float32 angles is off by at
# least 1/SHORT_BY of that, summed over those rows (row by row, another order of float32
# products can fall below): its error grows with the position as float32's does. An error
# flat in the position (a sine lookup table, noise) falls far below it at large positions.
GROWN_EPS = 8.0
SHORT_BY = 6.0
# Below this, a row's error is within the grading tolerance whatever the row holds.
ABS_FLOOR = 1e-6
# Rows compared first, before whole tables are computed and compared: enough to rule most
# mistakes out, few enough to stay cheap on a table of a million values.
SAMPLE_ROWS = 16
# What float64 arithmetic can leave on a row of zeros or near-zeros.
TINY = 1e-12
# The mistakes whose rows are turned by their row number rather than their position.
ROW_INDEX_MISTAKES = frozenset({"row_index_not_position"})


def code_of(key: str) -> str:
    """Return the mistake code of a key of the known tables ("wrong_base@1000" -> "wrong_base")."""
    return key.split("@", 1)[0]


def diagnose(x, positions, got, want, tables, staff=None, inputs=None):
    """Return the code of the known mistake that explains all of ``got`` (or the code and
    the numbers read, for a mistake named by measurement), or None.

    x: the input rows (n, d); positions: the n positions; got: the learner's answer as a
    float64 array of want's shape, known to be wrong; want: the right answer; tables: the
    dict {code: table} from the known mistakes of this input, or None when unavailable;
    staff: the staff module (it regenerates what a reading proposes, and the precision
    mistakes in their own arithmetic), or None in a learner kit; inputs: the case's inputs,
    by which the staff module keeps a case's whole tables.
    """
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64).reshape(-1)
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or got.ndim != 2 or x.shape != want.shape:
        return None
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        return None
    n, d = want.shape
    if d % 2 or p.size != n:
        return None
    # The length of each row's longest pair: a rotation is off by at most that times the
    # error of its angle.
    length = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1)
    # The mistakes that are no rotation of a pair by a position's angle keep their
    # generators, and are tried first: a table that one of them explains is that mistake.
    if tables is None and staff is not None:
        tables = _known_on_demand(staff, x, p, length, got, inputs)
    if tables:
        code = _known_mistake(tables, p, length, got, want)
        if code is not None:
            return code
    precision = _precision(x, p, length, got, want, staff)
    if precision is not None:
        return precision
    if staff is None:
        return None
    tail = _past_a_table(x, p, length, got, want, staff)
    if tail is not None:
        return tail
    from .measure import read

    reading = read(x, p, got, want)
    return None if reading is None else staff.confirm(x, p, got, want, reading, inputs)


def _row_err(a, b):
    return np.abs(a - b).max(axis=1)


def sample_rows(p):
    """Return rows spread over the table, with those of the smallest and largest position."""
    spread = np.linspace(0, p.size - 1, min(p.size, SAMPLE_ROWS)).astype(np.intp)
    return np.unique(np.concatenate([spread, [np.argmin(p), np.argmax(p)]]).astype(np.intp))


def _slack(p, length, in_float32, turned_by=None):
    """Return each row's slack: MATCH_TOL times its length when that is below 1, and with
    ``in_float32`` the error of angles computed in float32 (growing with the position the
    row is turned by: ``turned_by``, the positions unless said)."""
    slack = MATCH_TOL * np.minimum(1.0, length) + TINY
    if in_float32:
        turned_by = p if turned_by is None else turned_by
        slack = slack + _allowance(turned_by, length, FLOAT32_EPS) * length
    return slack


def fits_rows(table, p, length, got, in_float32=False):
    """Return True if ``table`` explains these rows of ``got`` (a sample: no telling asked)."""
    return bool(np.all(_row_err(got, table) <= _slack(p, length, in_float32)))


def _known_on_demand(staff, x, p, length, got, inputs=None):
    """Return the staff module's known tables, whole, of the mistakes that explain the
    sampled rows (as computed or in float32): most are ruled out there, cheaply."""
    rows = sample_rows(p)
    if inputs is None:
        sampled = staff.known_tables(x, p, rows)
    else:
        sampled = staff.sampled_tables(inputs, tuple(int(r) for r in rows))
    index = rows.astype(np.float64)
    keep = [
        key
        for key, table in sampled.items()
        if np.all(
            _row_err(got[rows], table)
            <= _slack(
                p[rows], length[rows], True, index if code_of(key) in ROW_INDEX_MISTAKES else None
            )
        )
    ]
    if not keep:
        return {}
    whole = staff.known_tables(x, p) if inputs is None else staff.case_tables(inputs)
    return {key: whole[key] for key in keep}


def _allowance(p, length, eps):
    """Return the error each row can get from computing with epsilon ``eps``, relative to its length."""
    return ANGLE_EPS * eps * (1.0 + p) + FLOOR_EPS * eps


def fits_known(table, p, length, got, want, in_float32=False, turned_by=None):
    """Return True if ``table`` explains every row of ``got`` and is told apart from
    ``want`` on some row where the slack tells anything (the matching rule).

    The slack is MATCH_TOL times the row's length when that is below 1 (on a row of
    entries near 1e-3, 2e-4 would let nearly any answer through); ``in_float32`` adds the
    error of angles computed in float32, which grows with the position the row is turned
    by (``turned_by``, the positions unless said).
    """
    unit = np.maximum(1.0, length)
    slack = _slack(p, length, in_float32, turned_by)
    apart = _row_err(table, want)
    # A mistake that changes nothing on this input (the base when d = 2, say), or only on
    # rows where any value would fit, cannot be told from the right answer.
    if not np.any((slack <= TELLING_SLACK * unit) & (apart > 2 * slack)):
        return False
    return bool(np.all(_row_err(got, table) <= slack))


def _known_mistake(tables, p, length, got, want):
    """Return the code of the one known mistake that explains every row of ``got``, if one does."""
    rows = np.arange(p.size, dtype=np.float64)
    for in_float32 in (False, True):
        fits = set()
        for key, table in tables.items():
            table = np.asarray(table, dtype=np.float64)
            if table.shape != want.shape:
                continue
            # As computed in float32 (layouts adapted from PyTorch code often are): the
            # error grows with the position the mistake turns the row by.
            turned_by = rows if code_of(key) in ROW_INDEX_MISTAKES else p
            if fits_known(table, p, length, got, want, in_float32, turned_by):
                fits.add(code_of(key))
        if len(fits) == 1:
            return fits.pop()
        if fits:  # two mistakes explain the answer equally well: naming one would be a guess
            return None
    return None


def pairs_kept(got, exact, length, pairs):
    """Return True if every pair of ``got`` (``pairs``: the columns of each pair's two
    coordinates) is as long as in ``exact`` within the rounding float32 products leave."""
    a, b = pairs
    moved = np.abs(np.hypot(got[:, a], got[:, b]) - np.hypot(exact[:, a], exact[:, b]))
    return bool(np.all(moved.max(axis=1) <= KEPT_EPS * FLOAT32_EPS * length + TINY))


def as_float32_angles(got, exact, table32, length, pairs):
    """Return True if ``got`` is off ``exact`` (a table computed in float64) as ``table32``
    (the same table regenerated with its angles in float32) is: every pair keeps its length,
    float32 tells on some row, and on those rows ``got`` is off at least 1/SHORT_BY as much
    in all (a lower bound: the error grows with the position). The upper bound is the
    caller's: the allowance of float32 angles, or the slack of fits_known."""
    grown = _row_err(table32, exact)
    telling = grown > GROWN_EPS * FLOAT32_EPS * length + TINY
    if not telling.any():
        return False
    if SHORT_BY * _row_err(got, exact)[telling].sum() < grown[telling].sum():
        return False
    return pairs_kept(got, exact, length, pairs)


def _within_precision(p, length, row_err, eps, telling):
    """Return True if every row's error fits a computation carried out with epsilon ``eps``.

    The angle p * frequency carries a relative error of a few eps, so the error of a row
    grows with its position (and its length); rows of small positions must then be nearly
    right, and some row must be tight enough for its allowance to tell anything.
    """
    slack = _allowance(p, length, eps) * length + ABS_FLOOR
    return bool(np.all(row_err <= slack) and np.any(slack <= telling * length))


def _regenerated(staff, code, x, p, length, got):
    """Return how far ``got`` is from the staff module's table for the precision mistake
    ``code``, in the arithmetic it names: the largest row error, in eps of float32 times
    the row's length."""
    table = staff.precision_table(x, p, code)
    scale = FLOAT32_EPS * np.maximum(length, TINY)
    return float((_row_err(got, table) / scale).max())


def _precision(x, p, length, got, want, staff):
    """Recognise answers right but for the precision they were computed in, told apart by
    how their error grows with the position: float16 values; an error flat in the
    position (a float32 sin/cos table); one that grows with it (float32 angles). Where the
    staff module is at hand, the precision named is the one whose regenerated table is
    much the closer (in a learner kit, an error flat in the position gets no hint)."""
    row_err = _row_err(got, want)
    # A rotation computed in float16 holds float16 values only, whatever it was returned as;
    # one computed in float32 (or float64) almost never does.
    with np.errstate(over="ignore"):
        float16_values = np.array_equal(got.astype(np.float16).astype(np.float64), got)
    if float16_values:
        if _within_precision(p, length, row_err, FLOAT16_EPS, TELLING_SLACK):
            return "low_precision_float16"
        return None
    flat = bool(np.all(row_err <= FLAT_EPS * FLOAT32_EPS * length + ABS_FLOOR))
    grows = _within_precision(p, length, row_err, FLOAT32_EPS, TELLING_FLOAT32)
    if not (flat or grows):
        return None
    adjacent = (np.arange(0, got.shape[1], 2), np.arange(1, got.shape[1], 2))
    if staff is None:
        # No formula in a kit: float32 angles are named where every pair kept its length.
        return (
            None
            if flat or not pairs_kept(got, want, length, adjacent)
            else ("low_precision_float32")
        )
    # Told apart on the sampled rows; the one named is then checked on every row.
    rows = sample_rows(p)
    sample = (x[rows], p[rows], length[rows], got[rows])
    table = _regenerated(staff, "low_precision_float32_table", *sample)
    angles = _regenerated(staff, "low_precision_float32", *sample)
    code = None
    if flat and table <= REGENERATED_EPS and angles > APART * max(table, 0.5):
        code = "low_precision_float32_table"
    elif grows and (not flat or table > APART * max(angles, 0.5)):
        code = "low_precision_float32"
    if code is None:
        return None
    if code == "low_precision_float32_table":
        return code if _regenerated(staff, code, x, p, length, got) <= REGENERATED_EPS else None
    # Float32 angles: every row within what they can be off by, and off as the regenerated
    # table is (at least a share of its error, every pair's length kept).
    table = staff.precision_table(x, p, code)
    slack = _allowance(p, length, FLOAT32_EPS) * length + ABS_FLOOR
    if not np.all(_row_err(got, table) <= slack):
        return None
    return code if as_float32_angles(got, want, table, length, adjacent) else None


def _past_a_table(x, p, length, got, want, staff):
    """Return table_precomputed and what was read when every row is right up to some
    position and every row past it is zeros, or turned as one position past the table's
    end would be (its index clamped): a table precomputed for that many positions. The
    code is an exception's hint: a hidden case's wrong answer never shows it (the
    vocabulary allows it with "raised IndexError" alone); a visible one says the numbers."""
    right = _row_err(got, want) <= MATCH_TOL * np.minimum(1.0, length) + TINY
    if right.all() or not right.any() or not np.any(p[right] > 0):
        return None
    last_right, first_wrong = p[right].max(), p[~right].min()
    if first_wrong <= last_right:
        return None
    tail = got[~right]
    if np.all(np.abs(tail) <= TINY * np.maximum(1.0, length[~right, None])):
        return "table_precomputed", (
            f"positions up to {last_right:.0f} are right and from {first_wrong:.0f} on the "
            f"rows are zeros: a table of at most {first_wrong:.0f} positions"
        )
    # Clamped: every row past the end turned by the table's last position, which lies
    # between the last right position and the first wrong one; tried from the top.
    for last in range(int(first_wrong) - 1, int(last_right) - 1, -1)[:64]:
        clamped = staff.right(x[~right], np.full(tail.shape[0], float(last)))
        if np.all(_row_err(tail, clamped) <= MATCH_TOL * np.minimum(1.0, length[~right]) + TINY):
            return "table_precomputed", (
                f"positions up to {last_right:.0f} are right and every later row is turned "
                f"as position {last}: a table of {last + 1} positions, its index clamped"
            )
    return None
