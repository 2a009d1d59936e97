import numpy as np

MAX_LEN = 5000


def _table(max_len, d_model):
    p = np.arange(max_len, dtype=float)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def sinusoidal_positions(positions, d_model):
    # A precomputed table, as in many tutorials; positions past its end are clamped.
    table = _table(MAX_LEN, d_model)
    return table[np.minimum(positions, MAX_LEN - 1)]
