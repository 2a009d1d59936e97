"""Tolerance and elementwise comparison of a candidate's table with the expected one."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import numpy.typing as npt

from grader.records import Mismatch, Tolerance

Array = npt.NDArray[np.float64]


def close_mask(got: Array, want: Array, tol: Tolerance) -> npt.NDArray[np.bool_]:
    """Return where ``|got - want| <= atol + rtol * |want|`` holds, elementwise.

    numpy.isclose with ``equal_nan=False`` where ``want`` is finite, as the expected values
    always are here: NaN never passes, and neither does an infinity (its difference is
    infinite). Written out because isclose's generality (broadcasting, infinities on both
    sides) costs more than the comparison itself on tables this small, once per case of
    every submission. Defaults: rtol = atol = 1e-6, which accepts the statement's
    6-significant-digit values and float32 output, and rejects half precision.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.subtract(got, want)
        np.abs(diff, out=diff)
        return np.less_equal(diff, bound(want, tol))


# Each read-only expected table's bound, computed once: a batch compares every submission
# with the same tables, and the bound (three passes over the table, each into fresh memory)
# cost more than the comparison itself.
_bounds: dict[int, tuple[weakref.ref[Array], Tolerance, Array]] = {}
_bounds_lock = threading.Lock()


def bound(want: Array, tol: Tolerance) -> Array:
    """Return ``atol + rtol * |want|``, from the cache when ``want`` cannot change."""
    key = id(want)
    hit = _bounds.get(key)
    if hit is not None and hit[0]() is want and hit[1] == tol:
        return hit[2]
    # One new table, not three: on a first run each new table is pages the kernel must fault
    # in (three tables of 4 MiB cost a submit about 14 ms). The same operations in the
    # same order as atol + rtol * |want|, so the very same bits.
    limit = np.abs(want)
    limit *= tol.rtol
    limit += tol.atol
    if not want.flags.writeable and want.base is None:  # owns its data, and it is frozen
        limit.setflags(write=False)
        with _bounds_lock:
            _bounds[key] = (weakref.ref(want, lambda _: _bounds.pop(key, None)), tol, limit)
    return limit


def count_wrong(got: Array, want: Array, tol: Tolerance) -> int:
    """Return how many values of ``got`` are outside the tolerance (shapes must agree)."""
    ok = close_mask(got, want, tol)
    return int(ok.size - np.count_nonzero(ok))


def compare(got: Array, want: Array, tol: Tolerance) -> Mismatch | None:
    """Return None when ``got`` matches ``want`` everywhere, else what is wrong.

    Both arrays must already have the same shape; shape checks belong to the caller, which
    can say which axis is off.
    """
    if got.shape != want.shape:
        raise ValueError(f"shapes differ: {got.shape} vs {want.shape}")
    ok = close_mask(got, want, tol)
    wrong = int(ok.size - np.count_nonzero(ok))
    if wrong == 0:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - want)
    finite = np.isfinite(err)
    # A NaN or infinity is the worst error there is: point at the first one.
    score = np.where(finite, err, np.inf)
    flat = int(np.argmax(np.where(ok, -1.0, score)))
    row, col = divmod(flat, want.shape[1]) if want.ndim == 2 else (flat, 0)
    max_abs = float(np.max(score))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(want != 0, score / np.abs(want), np.where(score == 0, 0.0, np.inf))
    return Mismatch(
        wrong=wrong,
        total=int(ok.size),
        max_abs_error=max_abs,
        max_rel_error=float(np.max(rel)),
        worst_row=row,
        worst_col=col,
        worst_got=float(got.flat[flat]),
        worst_want=float(want.flat[flat]),
        non_finite=int(np.count_nonzero(~np.isfinite(got))),
    )
