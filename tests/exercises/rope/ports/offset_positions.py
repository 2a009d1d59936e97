import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    a = np.outer(np.asarray(positions, dtype=np.float64) + 1, inv)
    c, s = np.cos(a), np.sin(a)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
