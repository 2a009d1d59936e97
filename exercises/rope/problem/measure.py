"""Read back what a rotary answer did: which columns turn together, how fast each pair
turns per position, which way, and which columns came back unchanged.

Public: the learner kit ships it. It reads angles from the answer and the input rows
(atan2 and hypot on each pair's point) and computes no rotation: the staff module
regenerates the table a reading proposes and compares it (staff.py's confirm); the kit,
which has no staff module, names only what its stored tables name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from grader.verdict.rates import fit_rates, fit_rows

# A pair keeps its length under a rotation: within this share (and a rounding floor).
LENGTH_TOL = 1e-3
# A column came back unchanged where it equals the input within this (times the row's
# length, at least 1).
SAME_TOL = 1e-9


class Layout(enum.Enum):
    """Which columns turn together: (2i, 2i + 1), or (i, i + d/2) of the turned block."""

    ADJACENT = "adjacent"
    HALVES = "halves"


@dataclass(frozen=True)
class Reading:
    """What an answer did, read back: the layout, how many leading columns turn (the rest
    came back unchanged), and each turned pair's angle per position (NaN where the rows
    do not fix it)."""

    layout: Layout
    turned: int
    width: int
    rates: np.ndarray

    def said(self) -> str:
        """Say the numbers read, for a visible example: the layout, the columns turned,
        and the first measured pair past pair 0 (pair 0 where none is)."""
        parts = []
        if self.layout is Layout.HALVES:
            parts.append(f"columns i and i + {self.turned // 2} turn together")
        if self.turned < self.width:
            parts.append(f"only the first {self.turned} of {self.width} columns turn")
        measured = [i for i in range(self.rates.size) if np.isfinite(self.rates[i])]
        later = [i for i in measured if i >= 1]
        for i in (later or measured)[:1]:
            parts.append(f"pair {i} turns at {self.rates[i]:.6g} per position")
        return "; ".join(parts)


def pairs_of(layout: Layout, turned: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the columns of each pair's two coordinates in a block of ``turned`` columns."""
    half = turned // 2
    if layout is Layout.ADJACENT:
        return np.arange(0, turned, 2), np.arange(1, turned, 2)
    return np.arange(half), np.arange(half, turned)


def unchanged_from(x: np.ndarray, got: np.ndarray, want: np.ndarray) -> int:
    """Return the first column from which every column came back as the input had it
    where the right answer changes it (the width when the last one changed); always even.

    A column the right answer leaves as it is (a pair of zeros, every position 0) tells
    nothing: it counts as turned.
    """
    scale = SAME_TOL * np.maximum(1.0, np.abs(x).max(axis=0))
    kept = np.all(np.abs(got - x) <= scale, axis=0)
    neutral = np.all(np.abs(want - x) <= scale, axis=0)
    turned = np.flatnonzero(~kept | neutral)
    last = int(turned[-1]) + 1 if turned.size else 0
    return min(x.shape[1], last + last % 2)


def read(x: np.ndarray, p: np.ndarray, got: np.ndarray, want: np.ndarray) -> Reading | None:
    """Return what ``got`` did to ``x`` at positions ``p`` (``want`` the right answer), or
    None where no layout keeps every pair's length (the answer is no rotation of pairs)."""
    rows = fit_rows(p)
    turned = unchanged_from(x, got, want)
    if rows.size == 0 or turned == 0:
        return None
    for layout in Layout:
        a, b = pairs_of(layout, turned)
        xa, xb, ga, gb = x[rows][:, a], x[rows][:, b], got[rows][:, a], got[rows][:, b]
        length = np.hypot(xa, xb)
        longest = np.maximum(length.max(axis=1, keepdims=True), 1e-300)
        kept = np.abs(np.hypot(ga, gb) - length) <= LENGTH_TOL * longest + 1e-9
        if not kept.all():
            continue
        angle = np.arctan2(xa * gb - xb * ga, xa * ga + xb * gb)
        rates = fit_rates(p[rows], angle, length / longest)
        if np.isfinite(rates).any():
            return Reading(layout, turned, x.shape[1], rates)
    return None
