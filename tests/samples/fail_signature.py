import numpy as np


def sinusoidal_positions(positions):
    return np.zeros((len(positions), 4))
