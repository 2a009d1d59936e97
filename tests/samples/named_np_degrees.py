import numpy as np


def sinusoidal_positions(positions, d_model):
    # The angles converted to degrees before sin and cos, which take radians.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = np.degrees(p / 10000 ** (np.arange(0, d_model, 2) / d_model))
    pe = np.empty((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
