import numpy as np


def sinusoidal_positions(positions, d_model):
    return np.zeros((len(positions), d_model))
