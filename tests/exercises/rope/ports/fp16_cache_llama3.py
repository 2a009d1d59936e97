import numpy as np


def apply_rope(x, positions):
    # Llama 3's base 500000, its cos/sin cache kept in float16 and the rotation in float64.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv_freq = (1.0 / 500000.0 ** (np.arange(0, d, 2, dtype=np.float32) / d)).astype(np.float32)
    angle = np.outer(np.asarray(positions, dtype=np.float32), inv_freq)
    cos = np.cos(angle).astype(np.float16).astype(np.float64)
    sin = np.sin(angle).astype(np.float16).astype(np.float64)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out
