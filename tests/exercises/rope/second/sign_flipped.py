import numpy as np


def apply_rope(x, positions):
    # Pairs as complex numbers, multiplied by the conjugate phase.
    arr = np.asarray(x, dtype=np.complex128)
    z = arr[:, 0::2] + 1j * arr[:, 1::2]
    d = arr.shape[1]
    freqs = np.exp(-np.log(10000.0) * np.arange(d // 2) * 2.0 / d)
    phase = np.exp(-1j * np.outer(positions, freqs))
    w = z * phase
    out = np.empty(arr.shape, dtype=np.float64)
    out[:, 0::2] = w.real
    out[:, 1::2] = w.imag
    return out
