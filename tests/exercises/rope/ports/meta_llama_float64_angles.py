import numpy as np


def apply_rope(x, positions):
    # Meta's Llama with its angles moved to float64 (the float32 hint followed): x is still
    # taken as complex float32 numbers and the product is complex64.
    d = x.shape[1]
    freqs = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    angle = np.outer(np.asarray(positions, dtype=np.float64), freqs)
    cis = (np.cos(angle) + 1j * np.sin(angle)).astype(np.complex64)
    x32 = np.asarray(x, dtype=np.float32)
    turned = (x32[:, 0::2] + 1j * x32[:, 1::2]).astype(np.complex64) * cis
    out = np.empty(x32.shape, dtype=np.float32)
    out[:, 0::2], out[:, 1::2] = turned.real, turned.imag
    return out.astype(np.float64)
