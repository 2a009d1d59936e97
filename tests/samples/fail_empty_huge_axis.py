# An empty table with an enormous second axis: no values at all, and a wrong shape.
import numpy as np


def sinusoidal_positions(positions, d_model):
    return np.empty((0, 10**9))
