import numpy as np


def apply_rope(x, positions):
    # Linear position interpolation (scaling_factor = 2): positions divided before the angles.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    scaling_factor = 2.0
    t = np.asarray(positions, dtype=np.float64) / scaling_factor
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    angle = np.outer(t, inv_freq)
    cos, sin = np.repeat(np.cos(angle), 2, axis=1), np.repeat(np.sin(angle), 2, axis=1)
    turned = np.empty_like(x)
    turned[:, 0::2] = -x[:, 1::2]
    turned[:, 1::2] = x[:, 0::2]
    return x * cos + turned * sin
