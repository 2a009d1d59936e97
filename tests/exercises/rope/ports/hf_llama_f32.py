import numpy as np


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate((-x[..., h:], x[..., :h]), axis=-1)


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float32)
    dim = x.shape[-1]
    inv_freq = (1.0 / (10000 ** (np.arange(0, dim, 2).astype(np.float32) / dim))).astype(np.float32)
    freqs = np.asarray(positions).astype(np.float32)[:, None] * inv_freq[None, :]
    emb = np.concatenate((freqs, freqs), axis=-1)
    return (x * np.cos(emb) + rotate_half(x) * np.sin(emb)).astype(np.float64)
