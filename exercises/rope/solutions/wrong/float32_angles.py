import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[-1]
    inv_freq = 1.0 / (10000 ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
    inv_freq = inv_freq.astype(np.float32)
    position_ids = np.asarray(positions).astype(np.float32)
    freqs = position_ids[:, None] * inv_freq[None, :]  # float32, as torch would keep it
    cos = np.repeat(np.cos(freqs), 2, axis=-1)
    sin = np.repeat(np.sin(freqs), 2, axis=-1)
    rotated = np.empty_like(x)
    rotated[:, 0::2] = -x[:, 1::2]
    rotated[:, 1::2] = x[:, 0::2]
    return x * cos + rotated * sin
