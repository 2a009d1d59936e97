import numpy as np


def _fixed_pos_embedding(seq, dim):
    inv_freq = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    sinusoid_inp = np.einsum("i,j->ij", seq, inv_freq)
    return np.sin(sinusoid_inp), np.cos(sinusoid_inp)


def _rotate_every_two(x):
    x1 = x[:, ::2]
    x2 = x[:, 1::2]
    return np.stack((-x2, x1), axis=-1).reshape(x.shape)


def apply_rope(x, positions):
    # The GPT-J way: adjacent pairs, each sin/cos value duplicated in place.
    x = np.asarray(x, dtype=float)
    sin, cos = _fixed_pos_embedding(np.asarray(positions, dtype=float), x.shape[1])
    sin = np.repeat(sin, 2, axis=1)
    cos = np.repeat(cos, 2, axis=1)
    return x * cos + _rotate_every_two(x) * sin
