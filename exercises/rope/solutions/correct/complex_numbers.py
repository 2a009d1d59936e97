import numpy as np


def apply_rope(x, positions):
    # Each pair (x[2i], x[2i+1]) is the complex number x[2i] + i x[2i+1]; turning it by an
    # angle is a product with exp(i * angle).
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    z = x[:, 0::2] + 1j * x[:, 1::2]
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d)
    t = np.asarray(positions, dtype=np.float64)
    freqs_cis = np.exp(1j * np.outer(t, inv_freq))
    rotated = z * freqs_cis
    out = np.stack([rotated.real, rotated.imag], axis=-1)
    return out.reshape(x.shape)
