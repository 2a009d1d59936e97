import numpy as np

N = 2048


def apply_rope(x, positions):
    # cos and sin tables of N positions, zero-padded past them.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    a = np.outer(np.arange(N, dtype=np.float64), inv)
    big = max(N, int(np.max(positions)) + 1)
    cos, sin = np.zeros((big, d // 2)), np.zeros((big, d // 2))
    cos[:N], sin[:N] = np.cos(a), np.sin(a)
    c, s = cos[np.asarray(positions)], sin[np.asarray(positions)]
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
