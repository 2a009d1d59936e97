import numpy as np


def apply_rope(x, positions):
    # Each pair is a row vector [a, b] times the 2x2 rotation matrix [[cos, -sin], [sin, cos]].
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    m_theta = np.asarray(positions, dtype=float)[:, None] * theta[None, :]
    c, s = np.cos(m_theta), np.sin(m_theta)
    pairs = x.reshape(n, d // 2, 1, 2)
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (n, d/2, 2, 2)
    return (pairs @ rot).reshape(n, d)
