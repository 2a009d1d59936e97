import math

import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv = 1.0 / 500000.0 ** (np.arange(0, d, 2) / d)
    factor, low, high, old = 8.0, 1.0, 4.0, 8192
    wl = 2 * math.pi / inv
    out_f = np.where(wl > old / low, inv / factor, inv)
    smooth = (old / wl - low) / (high - low)
    mid = (1 - smooth) * out_f / factor + smooth * out_f
    inv = np.where((wl >= old / high) & (wl <= old / low), mid, out_f)
    a = np.outer(np.asarray(positions, dtype=np.float64), inv)
    c, s = np.cos(a), np.sin(a)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
