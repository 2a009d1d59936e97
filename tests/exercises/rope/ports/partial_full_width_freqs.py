import numpy as np


def apply_rope(x, positions):
    # Half of the head turned in adjacent pairs (as ChatGLM turns half of it), but with the
    # frequencies of the whole head, 10000 ** (-2i / d), where ChatGLM uses the turned width.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    turned = max(2, d // 2 - (d // 2) % 2)
    freq = 1.0 / 10000.0 ** (np.arange(0, turned, 2) / d)
    angle = np.outer(np.asarray(positions, dtype=np.float64), freq)
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    even, odd = x[:, 0:turned:2], x[:, 1:turned:2]
    out[:, 0:turned:2] = even * c - odd * s
    out[:, 1:turned:2] = even * s + odd * c
    return out
