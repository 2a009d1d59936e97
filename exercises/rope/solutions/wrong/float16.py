import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float16)
    d = x.shape[1]
    inv_freq = (1.0 / 10000 ** (np.arange(0, d, 2) / d)).astype(np.float16)
    t = np.asarray(positions, dtype=np.float16)
    angle = t[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out
