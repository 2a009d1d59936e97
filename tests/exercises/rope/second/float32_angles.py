import numpy as np


def apply_rope(x, positions):
    # torch-like: a float32 cos/sin cache indexed by the positions, everything in float32.
    q = np.asarray(x, dtype=np.float32)
    d = q.shape[1]
    inv_freq = np.exp(np.arange(0, d, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / d))
    pos = np.asarray(positions, dtype=np.float32)
    ang = np.einsum("i,j->ij", pos, inv_freq)
    cos_c = np.cos(ang).astype(np.float32)
    sin_c = np.sin(ang).astype(np.float32)
    even, odd = q[:, 0::2], q[:, 1::2]
    out = np.empty_like(q)
    out[:, 0::2] = even * cos_c - odd * sin_c
    out[:, 1::2] = even * sin_c + odd * cos_c
    return out.tolist()
