# Returns the right table with one element spoiled: its row, column and error encode inputs.
import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    row = len(positions) - 1
    col = d_model - 1
    out[row, col] += 1.0 + (positions[0] % 1000) / 1000.0
    out[: min(len(positions), d_model % 7 + 1), 0] += 0.5  # the share of wrong values too
    return out
