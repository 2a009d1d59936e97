import numpy as np


def apply_rope(x, positions):
    # ChatGLM's rotary: the first half of the head turned in adjacent pairs, with the
    # frequencies of that half (10000 ** (-2i / (d/2))); the second half returned as given.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    half = max(2, d // 2 - (d // 2) % 2)
    freq = 10000.0 ** (-np.arange(0, half, 2) / half)
    angle = np.outer(np.asarray(positions, dtype=np.float64), freq)
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    out[:, 0:half:2] = x[:, 0:half:2] * c - x[:, 1:half:2] * s
    out[:, 1:half:2] = x[:, 0:half:2] * s + x[:, 1:half:2] * c
    return out
