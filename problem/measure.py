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


# Where pair i's sine and cosine stand: (2i, 2i + 1), or the halves (i, i + d/2) either
# way round.
LAYOUTS = ("interleaved", "halves", "halves_cos_first")


def columns_of(layout: str, d_model: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the columns of each pair's sine and cosine in ``layout``."""
    half = d_model // 2
    if layout == "interleaved":
        return np.arange(0, d_model, 2), np.arange(1, d_model, 2)
    first, second = np.arange(half), np.arange(half, d_model)
    return (first, second) if layout == "halves" else (second, first)


def read_rates(
    p: np.ndarray, got: np.ndarray, layout: str = "interleaved", rows: np.ndarray | None = None
) -> np.ndarray:
    """Return each pair's angle per position read from ``got`` in ``layout`` (NaN where the
    rows do not fix it), at the positions ``p`` (floats), on ``rows`` (fit_rows's)."""
    rows = fit_rows(p) if rows is None else rows
    if rows.size == 0:
        return np.full(got.shape[1] // 2, np.nan)
    sine, cosine = columns_of(layout, got.shape[1])
    sines, cosines = got[rows][:, sine], got[rows][:, cosine]
    length = np.hypot(sines, cosines)
    # A sine and cosine lie on the unit circle: a pair far off it holds no angle.
    on_circle = np.abs(length - 1.0) <= 1e-3
    weight = np.where(on_circle, length, 0.0)
    return fit_rates(p[rows], np.arctan2(sines, cosines), weight)


def read(p: np.ndarray, got: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Return each layout whose pairs all sit on the unit circle, with the rates read in it."""
    found = []
    # The rows the fit reads are enough to tell: the regenerated table checks every row.
    rows = fit_rows(p)
    some = got[rows]
    for layout in LAYOUTS:
        sine, cosine = columns_of(layout, got.shape[1])
        if np.all(np.abs(np.hypot(some[:, sine], some[:, cosine]) - 1.0) <= 1e-3):
            rates = read_rates(p, got, layout, rows)
            if np.isfinite(rates).any():
                found.append((layout, rates))
    return found


def said(rates: np.ndarray, base: str) -> str:
    """Say what was read, for a visible example: the first measured pair past pair 0, and
    the base it reads as (where it is not 10000)."""
    measured = [i for i in range(rates.size) if np.isfinite(rates[i]) and i >= 1]
    if not measured:
        return ""
    i = measured[0]
    text = f"pair {i} turns at {rates[i]:.6g} per position"
    if base:
        text += f", as with base {base}; this exercise uses base 10000"
    return text
