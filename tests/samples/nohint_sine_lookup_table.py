import numpy as np

# Angles in float64, the sine read from a table of 4096 steps over one turn (the nearest
# step), the cosine a quarter turn on: every angle off by up to half a step, at any position.
STEPS = 4096
SINE = np.sin(np.arange(STEPS) * (2.0 * np.pi / STEPS))


def _sine(angle):
    return SINE[np.rint(angle * (STEPS / (2.0 * np.pi))).astype(np.int64) % STEPS]


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2] = _sine(angle)
    out[:, 1::2] = _sine(angle + np.pi / 2)
    return out
