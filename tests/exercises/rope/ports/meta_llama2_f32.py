import numpy as np


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[1]
    freqs = (1.0 / (10000.0 ** (np.arange(0, dim, 2)[: dim // 2].astype(np.float32) / dim))).astype(
        np.float32
    )
    t = np.asarray(positions).astype(np.float32)
    f = np.outer(t, freqs).astype(np.float32)
    cis = np.cos(f) + 1j * np.sin(f)
    xc = (x[:, 0::2] + 1j * x[:, 1::2]).astype(np.complex64)
    o = xc * cis.astype(np.complex64)
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = o.real, o.imag
    return out
