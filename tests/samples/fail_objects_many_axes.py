# An array of Python objects with 33 axes: not numbers, said without its shape.
import numpy as np


def sinusoidal_positions(positions, d_model):
    return np.empty((1,) * 33, dtype=object)
