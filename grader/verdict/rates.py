"""Read back how fast each pair of a table turns: exercise-neutral arithmetic on angles.

An exercise's public module reads one angle per row and pair from a learner's table (with
atan2, from the pair's point) and the weight of that angle (the point's length: a pair at
the origin carries no angle); ``fit_rates`` returns each pair's angle per unit of the row's
own index value (its step), fitted where the angles are least wrapped first. The staff
module then regenerates the table a proposal names and compares: a rate read here is only
ever a proposal.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

TWO_PI = 2.0 * np.pi
# A pair's angle counts where its point is at least this long (relative to the row's
# longest): below it, rounding moves the angle by more than the tolerance below.
MIN_WEIGHT = 1e-3
# How far an angle may sit from rate * step once fitted (radians): looser than rounding a
# value to 6 digits can move it, tight enough that a rate explains the rows it fits.
ANGLE_TOL = 2e-3
# Rows the fit reads: spread over the steps, the smallest ones first (least wrapped). The
# staff module's regenerated table is what checks every row.
FIT_ROWS = 48
# Each round unwraps the rows up to this many times the largest step fitted so far.
REACH = 4.0


def wrapped(angle: Array) -> Array:
    """Return ``angle`` brought into [-pi, pi)."""
    return np.asarray((angle + np.pi) % TWO_PI - np.pi, dtype=np.float64)


def fit_rows(steps: Array) -> npt.NDArray[np.intp]:
    """Return the rows a fit reads: those of distinct positive steps, the smallest first,
    at most FIT_ROWS of them spread up to the largest."""
    order = np.argsort(steps, kind="stable")
    positive = order[steps[order] > 0]
    _, first = np.unique(steps[positive], return_index=True)
    distinct = positive[np.sort(first)]
    if distinct.size <= FIT_ROWS:
        return distinct
    head = distinct[: FIT_ROWS // 2]
    spread = np.linspace(FIT_ROWS // 2, distinct.size - 1, FIT_ROWS - FIT_ROWS // 2)
    return np.concatenate([head, distinct[spread.astype(np.intp)]])


def fit_rates(steps: Array, angle: Array, weight: Array) -> Array:
    """Return each column's rate (angle per step), NaN where the rows read do not fix it.

    ``steps`` (m,) positive and increasing, ``angle`` and ``weight`` (m, h), the rows
    ``fit_rows`` chose. A first guess comes from the smallest step; each round unwraps the
    rows within REACH times the steps already fitted and fits again, by least squares
    weighted by the pairs' lengths, through the origin. A column whose angles stay off the
    line by more than ANGLE_TOL on any weighted row has no rate.
    """
    m, h = angle.shape
    if m == 0 or h == 0:
        return np.full(h, np.nan)
    w = np.where(weight >= MIN_WEIGHT, weight, 0.0)
    s = steps.reshape(-1, 1)
    counted = w > 0
    # The first weighted row of each column gives the first guess.
    first = np.argmax(counted, axis=0)
    cols = np.arange(h)
    rate = angle[first, cols] / steps[first]
    fitted_to = steps[first]
    while True:
        reach = np.minimum(fitted_to * REACH, steps[-1])
        within = counted & (s <= reach)
        turned = angle + TWO_PI * np.round((rate * s - angle) / TWO_PI)
        ws = np.where(within, w * s, 0.0)
        rate = (ws * turned).sum(axis=0) / np.maximum((ws * s).sum(axis=0), 1e-300)
        if np.all(reach >= steps[-1]):
            break
        fitted_to = reach
    off = np.abs(wrapped(angle - rate * s))
    fits = np.all(~counted | (off <= ANGLE_TOL), axis=0) & counted.any(axis=0)
    return np.where(fits, rate, np.nan)
