"""The tolerance function at its boundaries."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.compare import bound, close_mask, compare
from grader.records import Tolerance

TOL = Tolerance(rtol=1e-6, atol=1e-6)


def test_just_inside_and_just_outside() -> None:
    """An error equal to atol + rtol*|want| passes; a little more fails."""
    want = np.array([[0.5, -1.0]])
    bound = TOL.atol + TOL.rtol * np.abs(want)
    assert compare(want + bound * 0.999, want, TOL) is None
    m = compare(want + bound * 1.01, want, TOL)
    assert m is not None and m.wrong == 2 and m.total == 2


def test_nan_and_inf_never_equal() -> None:
    """NaN and infinities count as wrong, and the worst element points at them."""
    want = np.zeros((2, 2))
    got = want.copy()
    got[1, 0] = np.nan
    got[0, 1] = np.inf
    assert not close_mask(got, want, TOL)[1, 0]
    m = compare(got, want, TOL)
    assert m is not None and m.wrong == 2 and m.non_finite == 2
    assert (m.worst_row, m.worst_col) in {(0, 1), (1, 0)}
    assert m.max_abs_error == np.inf


def test_worst_element_located() -> None:
    """The worst element's row and column are reported."""
    want = np.zeros((3, 4))
    got = want.copy()
    got[2, 3] = 0.5
    got[0, 0] = 0.1
    m = compare(got, want, TOL)
    assert m is not None and (m.worst_row, m.worst_col) == (2, 3)
    assert m.max_abs_error == 0.5 and m.worst_got == 0.5


def test_shape_must_match() -> None:
    """compare refuses arrays of different shapes: shape checks come first."""
    try:
        compare(np.zeros((2, 3)), np.zeros((3, 2)), TOL)
    except ValueError:
        return
    raise AssertionError("compare accepted different shapes")


def test_float32_passes_float16_fails() -> None:
    """The default tolerance accepts float32 rounding and rejects half precision."""
    want = np.sin(np.linspace(0, 10, 200)).reshape(20, 10)
    assert compare(want.astype(np.float32).astype(np.float64), want, TOL) is None
    assert compare(want.astype(np.float16).astype(np.float64), want, TOL) is not None


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
FINITE = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, width=64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(FLOATS, FINITE), min_size=1, max_size=40),
    st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]),
    st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]),
)
def test_close_mask_is_isclose_for_finite_expected(
    pairs: list[tuple[float, float]], rtol: float, atol: float
) -> None:
    """The written-out mask agrees with numpy.isclose wherever the expected value is finite,
    whatever the answer holds: NaN, infinities, huge values that overflow the difference."""
    got = np.array([[g for g, _ in pairs]])
    want = np.array([[w for _, w in pairs]])
    tol = Tolerance(rtol=rtol, atol=atol)
    with np.errstate(over="ignore", invalid="ignore"):  # isclose's own overflow, expected
        expected = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=False)
    assert (close_mask(got, want, tol) == expected).all()


def test_bound_is_cached_only_for_tables_that_cannot_change() -> None:
    """A frozen expected table's bound is computed once; a writable one's every time."""
    frozen = np.array([[0.5, -2.0]])
    frozen.setflags(write=False)
    first = bound(frozen, TOL)
    assert first is bound(frozen, TOL)
    assert bound(frozen, Tolerance(rtol=0.0, atol=0.5)).tolist() == [[0.5, 0.5]]
    writable = np.array([[0.5, -2.0]])
    assert bound(writable, TOL).tolist() == first.tolist()
    writable[0, 1] = 0.0
    assert bound(writable, TOL)[0, 1] == TOL.atol  # not a stale cached value
    view = frozen[:, :1]  # read-only, but over memory another array owns
    assert bound(view, TOL) is not bound(view, TOL)
