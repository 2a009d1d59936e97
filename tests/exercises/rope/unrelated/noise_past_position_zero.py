import numpy as np


def apply_rope(x, positions):
    # The right rotation plus noise of 3e-4 of each row's longest pair on every row but
    # those of position 0: an error that does not grow with the position.
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(positions, dtype=np.float64)
    d = x.shape[1]
    angle = np.repeat(np.outer(p, 10000.0 ** (-np.arange(0, d, 2) / d)), 2, axis=1)
    turned = np.empty_like(x)
    turned[:, 0::2] = -x[:, 1::2]
    turned[:, 1::2] = x[:, 0::2]
    out = x * np.cos(angle) + turned * np.sin(angle)
    longest = np.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2).max(axis=1, keepdims=True)
    noise = np.random.default_rng(7).uniform(-1.0, 1.0, out.shape)
    return out + 3e-4 * noise * longest * (p[:, None] > 0)
