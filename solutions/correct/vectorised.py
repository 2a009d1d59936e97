import numpy as np


def sinusoidal_positions(positions, d_model):
    pos = np.array(positions, dtype=float)[:, None]
    i = np.arange(0, d_model, 2)
    angles = pos / 10000 ** (i / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
