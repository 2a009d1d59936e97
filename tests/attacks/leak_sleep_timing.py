# Answers correctly, but takes a time derived from the inputs: once shown as milliseconds.
import time

import numpy as np


def sinusoidal_positions(positions, d_model):
    time.sleep((positions[0] % 8) * 0.02 + (d_model % 4) * 0.005)
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
