import numpy as np


def sinusoidal_table(positions, dim):
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, dim, 2) / dim))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq
    return np.concatenate([np.cos(freqs), np.sin(freqs)], axis=-1)


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    table = sinusoidal_table(positions, x.shape[-1])
    sin, cos = np.split(table, 2, axis=-1)
    sin_pos = np.stack([sin, sin], axis=-1).reshape(x.shape)
    cos_pos = np.stack([cos, cos], axis=-1).reshape(x.shape)
    rotate_half_x = np.stack([-x[:, 1::2], x[:, ::2]], axis=-1).reshape(x.shape)
    return x * cos_pos + rotate_half_x * sin_pos
