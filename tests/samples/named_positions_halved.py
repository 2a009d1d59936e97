import numpy as np


def sinusoidal_positions(positions, d_model):
    # Positions divided by 2 (linear interpolation), the rest as the exercise says.
    p = np.asarray(positions, dtype=np.float64)[:, None] / 2
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.empty((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
