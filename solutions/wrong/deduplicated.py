import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.unique(positions).astype(float)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((len(p), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
