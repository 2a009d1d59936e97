import numpy as np


def apply_rope(x, positions):
    # Meta's Llama 3 port: complex rotation of adjacent pairs, rope_theta = 500000, in float32.
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[-1]
    freqs = 1.0 / (500000.0 ** (np.arange(0, dim, 2)[: dim // 2].astype(np.float32) / dim))
    t = np.asarray(positions).astype(np.float32)
    freqs = np.outer(t, freqs.astype(np.float32))
    freqs_cis = np.exp(1j * freqs.astype(np.float64))
    xc = x[:, 0::2] + 1j * x[:, 1::2]
    out = xc * freqs_cis
    res = np.empty_like(x)
    res[:, 0::2] = out.real
    res[:, 1::2] = out.imag
    return res
