import numpy as np


def sinusoidal_positions(positions, d_model):
    # Sines then cosines, with base 1e6.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    inv = 1.0 / 1e6 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(p * inv), np.cos(p * inv)], axis=1)
