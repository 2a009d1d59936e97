import math

import numpy as np


def sinusoidal_positions(positions, d_model):
    # tensor2tensor's timing signal with max_timescale = 1e5, computed in float32.
    num = d_model // 2
    inc = math.log(1e5) / max(num - 1, 1)
    inv = np.exp(np.arange(num, dtype=np.float32) * -inc).astype(np.float32)
    t = np.asarray(positions, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1).astype(np.float64)
