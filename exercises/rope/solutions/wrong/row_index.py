import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    seq_len, dim = x.shape
    inv_freq = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    # cache cos/sin for the sequence and apply them row by row
    t = np.arange(seq_len, dtype=np.float64)
    freqs = np.einsum("i,j->ij", t, inv_freq)
    cos = np.repeat(np.cos(freqs), 2, axis=-1)
    sin = np.repeat(np.sin(freqs), 2, axis=-1)
    rot = np.stack([-x[:, 1::2], x[:, ::2]], axis=-1).reshape(x.shape)
    return x * cos + rot * sin
