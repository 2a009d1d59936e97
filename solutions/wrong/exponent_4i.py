import numpy as np


def sinusoidal_positions(positions, d_model):
    pos = np.asarray(positions, dtype=np.float64).reshape(-1, 1)
    i = np.arange(0, d_model, 2)
    angle_rates = 1 / np.power(10000, (2 * i) / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(pos * angle_rates)
    pe[:, 1::2] = np.cos(pos * angle_rates)
    return pe
