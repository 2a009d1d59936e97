import numpy as np


def apply_rope(x, positions):
    # Everything in float64; the result is handed back as float32, which the tolerance allows.
    x = np.array(x, dtype=np.float64)
    d = x.shape[-1]
    freqs = np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * freqs[None, :]
    c = np.repeat(np.cos(angles), 2, axis=-1)
    s = np.repeat(np.sin(angles), 2, axis=-1)
    swapped = np.empty_like(x)
    swapped[:, ::2] = -x[:, 1::2]
    swapped[:, 1::2] = x[:, ::2]
    return (x * c + swapped * s).astype(np.float32)
