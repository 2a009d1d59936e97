import math

import numpy as np


def sinusoidal_positions(positions, d_model):
    position = np.asarray(positions, dtype=np.float64)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe = np.empty((len(positions), d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe
