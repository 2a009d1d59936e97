# A table with three more axes of length one: a wrong shape, however it is written.
import numpy as np


def sinusoidal_positions(positions, d_model):
    return np.zeros((len(positions), d_model, 1, 1, 1))
