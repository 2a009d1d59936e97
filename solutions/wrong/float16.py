import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float16)[:, None]
    freq = (1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)).astype(np.float16)
    angle = p * freq
    pe = np.zeros((len(positions), d_model), dtype=np.float16)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
