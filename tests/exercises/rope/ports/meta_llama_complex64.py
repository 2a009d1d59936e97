import numpy as np


def apply_rope(x, positions):
    # Meta's Llama: float32 frequencies and angles, the turn taken as a complex64 product
    # with x viewed as complex float32 numbers.
    d = x.shape[1]
    freqs = 1.0 / np.float32(10000.0) ** (np.arange(0, d, 2).astype(np.float32) / np.float32(d))
    angle = np.outer(np.asarray(positions, dtype=np.float32), freqs.astype(np.float32))
    cis = (np.cos(angle) + 1j * np.sin(angle)).astype(np.complex64)
    x32 = np.asarray(x, dtype=np.float32)
    turned = (x32[:, 0::2] + 1j * x32[:, 1::2]).astype(np.complex64) * cis
    out = np.empty(x32.shape, dtype=np.float32)
    out[:, 0::2], out[:, 1::2] = turned.real, turned.imag
    return out.astype(np.float64)
