import numpy as np
import this_module_does_not_exist


def sinusoidal_positions(positions, d_model):
    return np.zeros((len(positions), d_model))
