import numpy as np


def apply_rope(x, positions):
    x = np.array(x, dtype=float)
    n, d = x.shape
    pos = np.asarray(positions, dtype=float).reshape(n, 1)
    theta = pos * np.power(10000.0, -np.arange(0, d, 2) / d)
    cos = np.cos(theta).repeat(2, axis=1)
    sin = np.sin(theta).repeat(2, axis=1)
    x1, x2 = np.split(x, 2, axis=1)
    return x * cos + np.hstack([-x2, x1]) * sin
