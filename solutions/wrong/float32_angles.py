import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float32)[:, None]
    freq = np.float32(1.0) / np.float32(10000.0) ** (np.arange(0, d_model, 2, dtype=np.float32) / np.float32(d_model))
    angle = p * freq
    pe = np.zeros((len(positions), d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
