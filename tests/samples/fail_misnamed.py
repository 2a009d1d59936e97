import numpy as np


def sinusoidal_position(positions, d_model):
    return np.zeros((len(positions), d_model))


def helper():
    return 1
