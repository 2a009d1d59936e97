import numpy as np


def apply_rope(x, positions):
    # "half precision like on the GPU": angles computed in float64, then the cos/sin cache
    # and the data are cast to float16 before the rotation.
    xs = np.asarray(x, dtype=np.float64)
    d = xs.shape[-1]
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, d, 2) / d))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq
    cos = np.cos(freqs).astype(np.float16)
    sin = np.sin(freqs).astype(np.float16)
    h = xs.astype(np.float16)
    a, b = h[:, 0::2], h[:, 1::2]
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(h.shape)
