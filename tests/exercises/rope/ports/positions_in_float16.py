import numpy as np


def apply_rope(x, positions):
    # The positions held in float16 (exact up to 2048, then rounded to a step of 2, 4, ...,
    # and infinite past 65504); the rest in float64.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    p = np.asarray(positions, dtype=np.float16).astype(np.float64)
    angle = np.repeat(np.outer(p, 10000.0 ** (-np.arange(0, d, 2) / d)), 2, axis=1)
    turned = np.empty_like(x)
    turned[:, 0::2] = -x[:, 1::2]
    turned[:, 1::2] = x[:, 0::2]
    return x * np.cos(angle) + turned * np.sin(angle)
