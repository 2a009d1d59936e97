import numpy as np


def apply_rope(x, positions):
    # Mistral's rope_theta = 1e6, with the complex rotation of adjacent pairs (float64).
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[1]
    theta = 1e6
    freqs = 1.0 / theta ** (np.arange(0, dim, 2) / dim)
    angles = np.outer(np.asarray(positions, dtype=np.float64), freqs)
    rotated = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * angles)
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = rotated.real, rotated.imag
    return out
