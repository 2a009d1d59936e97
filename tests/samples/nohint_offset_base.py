import numpy as np


def sinusoidal_positions(positions, d_model):
    # A base close to 10000 but none of the usual wrong ones, and positions shifted by one.
    p = np.asarray(positions, dtype=np.float64)[:, None] + 1
    angle = p / 12345.0 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.empty((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
