import numpy as np

# A sine read from a table of 4096 steps over one turn (the nearest step), the cosine a
# quarter turn on: each angle off by up to half a step, whatever the position.
STEPS = 4096
SINE = np.sin(np.arange(STEPS) * (2.0 * np.pi / STEPS))


def _sine(angle):
    return SINE[np.rint(angle * (STEPS / (2.0 * np.pi))).astype(np.int64) % STEPS]


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    freq = 10000.0 ** (-np.arange(0, d, 2) / d)
    angle = np.outer(np.asarray(positions, dtype=np.float64), freq)
    s, c = _sine(angle), _sine(angle + np.pi / 2)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out
