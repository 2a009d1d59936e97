import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=float)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
