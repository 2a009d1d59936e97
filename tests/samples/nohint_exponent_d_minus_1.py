import numpy as np


def sinusoidal_positions(positions, d_model):
    # float64 throughout, but the exponent divides by d_model - 1.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / (d_model - 1))
    pe = np.empty((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
