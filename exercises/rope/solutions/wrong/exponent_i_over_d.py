import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    i = np.arange(d // 2)
    freqs = 1.0 / (10000 ** (i / d))
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs
    cos, sin = np.cos(angles), np.sin(angles)
    x_even, x_odd = x[:, 0::2], x[:, 1::2]
    out = np.zeros_like(x)
    out[:, 0::2] = x_even * cos - x_odd * sin
    out[:, 1::2] = x_even * sin + x_odd * cos
    return out
