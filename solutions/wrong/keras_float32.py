import numpy as np


def sinusoidal_positions(positions, d_model):
    # Everything in the layer's compute dtype, float32, as a Keras layer would.
    dtype = np.float32
    position = np.asarray(positions).astype(dtype)[:, None]
    min_freq = dtype(1.0 / 10000.0)
    timescales = np.power(min_freq, (2 * (np.arange(d_model) // 2)).astype(dtype) / dtype(d_model))
    angles = position * timescales[None, :]
    cos_mask = (np.arange(d_model) % 2).astype(dtype)
    sin_mask = dtype(1) - cos_mask
    return np.sin(angles) * sin_mask + np.cos(angles) * cos_mask
