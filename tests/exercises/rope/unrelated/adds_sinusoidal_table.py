import numpy as np


def apply_rope(x, positions):
    # Adds the position table, as in the original transformer, instead of rotating.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    angle = np.asarray(positions, dtype=np.float64)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    pe = np.zeros_like(x)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return x + pe
