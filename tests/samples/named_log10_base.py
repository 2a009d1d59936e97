import math

import numpy as np


def sinusoidal_positions(positions, d_model):
    # exp(-log(10000) * 2i / d), with log10 taken for the natural log.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-math.log10(10000.0) / d_model))
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(p * div_term)
    pe[:, 1::2] = np.cos(p * div_term)
    return pe
