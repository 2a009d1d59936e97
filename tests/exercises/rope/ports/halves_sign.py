import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    h = d // 2
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    a = np.outer(np.asarray(positions, dtype=np.float64), inv)
    emb = np.concatenate((a, a), 1)
    rh = np.concatenate((x[:, h:], -x[:, :h]), 1)
    return x * np.cos(emb) + rh * np.sin(emb)
