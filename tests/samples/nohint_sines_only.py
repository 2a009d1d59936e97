import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000 ** (np.arange(d_model) // 2 * 2 / d_model)
    return np.sin(angle)
