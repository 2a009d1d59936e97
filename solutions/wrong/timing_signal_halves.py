import math

import numpy as np


def sinusoidal_positions(positions, d_model, min_timescale=1.0, max_timescale=1.0e4):
    # Timescales in a geometric progression, one per channel pair; sines then cosines.
    position = np.asarray(positions, dtype=np.float64)
    num_timescales = d_model // 2
    log_timescale_increment = math.log(float(max_timescale) / float(min_timescale)) / max(
        num_timescales - 1, 1
    )
    inv_timescales = min_timescale * np.exp(
        np.arange(num_timescales, dtype=np.float64) * -log_timescale_increment
    )
    scaled_time = np.expand_dims(position, 1) * np.expand_dims(inv_timescales, 0)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return signal
