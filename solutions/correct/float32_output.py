import numpy as np


def sinusoidal_positions(positions, d_model):
    # Computed in float64, handed back in float32: within the tolerance.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    freq = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    out = np.stack([np.sin(p * freq), np.cos(p * freq)], axis=-1).reshape(len(positions), d_model)
    return out.astype(np.float32)
