import numpy as np


def apply_rope(x, positions):
    # NTK-aware scaling for a context four times longer: the base grows by a ** (d / (d - 2)).
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    alpha = 4.0
    base = 10000.0 * alpha ** (d / (d - 2))
    inv_freq = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    t = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq
    c, s = np.cos(t), np.sin(t)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
