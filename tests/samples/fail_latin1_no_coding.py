# Written by François in Latin-1, with no coding line: `python` itself refuses it.
"""Trusted reference for the sinusoidal position encodings exercise (float64, vectorised)."""

import numpy as np


def sinusoidal_positions(positions, d_model):
    """Return the (len(positions), d_model) table of interleaved sine/cosine encodings."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 1)
    pair = np.arange(d_model // 2, dtype=np.float64)
    freq = 1.0 / np.power(10000.0, 2.0 * pair / d_model)
    angle = p * freq
    out = np.empty((p.shape[0], d_model), dtype=np.float64)
    out[:, 0::2] = np.sin(angle)
    out[:, 1::2] = np.cos(angle)
    return out
