import math

import numpy as np

PADDING_IDX = 0


def sinusoidal_positions(positions, d_model, padding_idx=PADDING_IDX):
    position = np.asarray(positions, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    table = np.zeros((len(positions), d_model))
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term)
    if padding_idx is not None:
        # The padding token gets no position signal.
        table[np.asarray(positions) == padding_idx, :] = 0
    return table
