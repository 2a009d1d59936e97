import numpy as np


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return np.concatenate((-x2, x1), axis=-1)


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[-1]
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate((freqs, freqs), axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    return x * cos + rotate_half(x) * sin
