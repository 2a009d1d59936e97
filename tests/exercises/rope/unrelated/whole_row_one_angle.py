import numpy as np


def apply_rope(x, positions):
    # Every pair turned by the position itself (frequency 1 everywhere).
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64)[:, None]
    c, s = np.cos(p), np.sin(p)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
