"""Read back how fast each pair of a sinusoidal answer turns per position.

Public: the learner kit ships it. Pair i's angle is read from its sine (column 2i) and
cosine (column 2i + 1) with atan2, weighted by their hypot (a pair at the origin carries no
angle); the rate per position is fitted least-wrapped first (grader/verdict/rates.py).
Nothing here computes an encoding: the staff module regenerates the table a rate proposes
(staff.py's confirm) and compares it; the kit, which has no staff module, names only what
its stored tables name.
"""

from __future__ import annotations

import numpy as np

from grader.verdict.rates import fit_rates, fit_rows


def read_rates(p: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Return each pair's angle per position read from ``got`` (NaN where the rows do not
    fix it), at the positions ``p`` (floats)."""
    rows = fit_rows(p)
    if rows.size == 0:
        return np.full(got.shape[1] // 2, np.nan)
    sines, cosines = got[rows][:, 0::2], got[rows][:, 1::2]
    length = np.hypot(sines, cosines)
    # A sine and cosine lie on the unit circle: a pair far off it holds no angle.
    on_circle = np.abs(length - 1.0) <= 1e-3
    weight = np.where(on_circle, length, 0.0)
    return fit_rates(p[rows], np.arctan2(sines, cosines), weight)


def said(rates: np.ndarray, base: str) -> str:
    """Say what was read, for a visible example: the first measured pair past pair 0."""
    measured = [i for i in range(rates.size) if np.isfinite(rates[i]) and i >= 1]
    if not measured:
        return ""
    i = measured[0]
    return (
        f"pair {i} turns at {rates[i]:.6g} per position, as with base {base}; "
        "this exercise uses base 10000"
    )
