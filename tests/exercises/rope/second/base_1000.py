import numpy as np


class RotaryCache:
    def __init__(self, dim, theta=1e3):
        self.inv_freq = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)

    def __call__(self, pos):
        freqs = np.asarray(pos, dtype=np.float64)[:, None] * self.inv_freq
        return np.cos(freqs), np.sin(freqs)


def apply_rope(x, positions):
    q = np.asarray(x, dtype=np.float64)
    cos, sin = RotaryCache(q.shape[1])(positions)
    q_r, q_i = q[:, ::2], q[:, 1::2]
    return np.stack([q_r * cos - q_i * sin, q_r * sin + q_i * cos], axis=-1).reshape(q.shape)
