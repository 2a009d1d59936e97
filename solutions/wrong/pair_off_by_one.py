import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=float)[:, None]
    i = np.arange(1, d_model // 2 + 1)
    angle = p / 10000 ** (2 * i / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
