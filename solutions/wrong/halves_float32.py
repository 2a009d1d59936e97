import math

import numpy as np


def sinusoids(positions, channels, max_timescale=10000):
    """Sines then cosines, timescales from 1 to 1 / max_timescale; float32 throughout."""
    log_timescale_increment = np.float32(math.log(max_timescale) / max(channels // 2 - 1, 1))
    inv_timescales = np.exp(-log_timescale_increment * np.arange(channels // 2, dtype=np.float32))
    scaled_time = np.asarray(positions, dtype=np.float32)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


def sinusoidal_positions(positions, d_model):
    return sinusoids(positions, d_model)
