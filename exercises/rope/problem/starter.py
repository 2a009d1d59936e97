"""Rotary position embeddings: fill in apply_rope, then run `grader run THIS_FILE`."""

import numpy as np


def apply_rope(x, positions):
    """Return x with every adjacent pair of columns rotated according to its row's position.

    x is a float64 NumPy array of shape (n, d), d even (your own: a fresh, writable one per
    call), positions a list of n integers >= 0.
    The result has shape (n, d): row k is row k of x, turned pair by pair by angles that
    depend on positions[k] (see the statement). Position 0 leaves a row as it is.
    """
    raise NotImplementedError("write me")
