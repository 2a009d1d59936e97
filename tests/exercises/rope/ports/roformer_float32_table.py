import numpy as np


def apply_rope(x, positions):
    # RoFormer's sinusoidal table kept in float32 (the angles themselves in float64), then
    # applied to x in float64.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angle = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq
    sin = np.sin(angle).astype(np.float32)
    cos = np.cos(angle).astype(np.float32)
    sin_pos = np.repeat(sin, 2, axis=1)
    cos_pos = np.repeat(cos, 2, axis=1)
    rotated = np.stack([-x[:, 1::2], x[:, 0::2]], axis=-1).reshape(x.shape)
    return x * cos_pos + rotated * sin_pos
