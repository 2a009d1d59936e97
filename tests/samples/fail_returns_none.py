import numpy as np


def sinusoidal_positions(positions, d_model):
    pe = np.zeros((len(positions), d_model))
    pe[:, 1::2] = 1.0
