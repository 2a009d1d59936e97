import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    rot = max(2, d // 4 // 2 * 2)
    inv = 1.0 / 10000 ** (np.arange(0, rot, 2) / rot)
    a = np.outer(np.asarray(positions, dtype=np.float64), inv)
    sin, cos = np.repeat(np.sin(a), 2, 1), np.repeat(np.cos(a), 2, 1)
    xr = x[:, :rot]
    r2 = np.stack((-xr[:, 1::2], xr[:, ::2]), axis=-1).reshape(xr.shape)
    return np.concatenate((xr * cos + r2 * sin, x[:, rot:]), axis=1)
