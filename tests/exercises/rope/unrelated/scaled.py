import math

import numpy as np


def apply_rope(x, positions):
    # Rotates correctly, then scales like attention scores by 1 / sqrt(d).
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    angle = np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out / math.sqrt(d)
