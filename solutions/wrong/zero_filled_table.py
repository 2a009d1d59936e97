import numpy as np

MAX_LEN = 4096


def _table(max_len, d_model):
    position = np.arange(max_len, dtype=np.float64)[:, None]
    div_term = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term)
    return table


def sinusoidal_positions(positions, d_model):
    # Look positions up in a table of MAX_LEN rows; those past its end keep zeros.
    positions = np.asarray(positions)
    out = np.zeros((len(positions), d_model))
    inside = positions < MAX_LEN
    out[inside] = _table(MAX_LEN, d_model)[positions[inside]]
    return out
