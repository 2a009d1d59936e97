import numpy as np


def sinusoidal_positions(positions, d_model):
    # The angles themselves, never passed through sin or cos.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    return p / 10000 ** (np.arange(d_model) // 2 * 2 / d_model)
