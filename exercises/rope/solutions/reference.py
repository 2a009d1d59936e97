"""Trusted reference for the rotary position embedding exercise (float64, vectorised)."""

import numpy as np


def apply_rope(x, positions):
    """Rotate each adjacent pair (2i, 2i+1) of row k by positions[k] * 10000 ** (-2i / d)."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    p = np.asarray(positions, dtype=np.float64).reshape(n, 1)
    pair = np.arange(d // 2, dtype=np.float64)
    freq = np.power(10000.0, -2.0 * pair / d)
    angle = p * freq
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[:, 0::2], x[:, 1::2]
    out = np.empty((n, d), dtype=np.float64)
    out[:, 0::2] = even * cos - odd * sin
    out[:, 1::2] = even * sin + odd * cos
    return out
