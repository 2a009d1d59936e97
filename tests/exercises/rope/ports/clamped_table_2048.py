import numpy as np

N = 2048


def apply_rope(x, positions):
    # A table of N positions, the index clamped to its end.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    table = np.outer(np.arange(N, dtype=np.float64), inv)
    a = table[np.minimum(np.asarray(positions), N - 1)]
    c, s = np.cos(a), np.sin(a)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
