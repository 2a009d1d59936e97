import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    freqs = 1.0 / (10000.0 ** (np.arange(0, d, 2) / d))
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs
    emb = np.repeat(angles, 2, axis=-1)  # [t0, t0, t1, t1, ...]
    x1, x2 = x[:, : d // 2], x[:, d // 2 :]
    rotated = np.concatenate([-x2, x1], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)
