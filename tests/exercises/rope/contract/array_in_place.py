import numpy as np

_earlier = []


def apply_rope(x, positions):
    # The contract of version 2: x is a writable float64 array of shape (n, d), a fresh one
    # per call; this turns it in place and returns it.
    if type(x) is not np.ndarray or x.dtype != np.float64 or x.ndim != 2:
        raise TypeError(f"x is a {type(x).__name__}, not a float64 table")
    if not x.flags.writeable:
        raise ValueError("x cannot be written")
    if any(np.may_share_memory(x, seen) for seen in _earlier):
        raise ValueError("x shares its memory with an earlier call's")
    n, d = x.shape
    freq = 10000.0 ** (-2.0 * np.arange(d // 2, dtype=np.float64) / d)
    angle = np.asarray(positions, dtype=np.float64).reshape(n, 1) * freq
    cos, sin = np.cos(angle), np.sin(angle)
    even = x[:, 0::2].copy()
    odd = x[:, 1::2]
    x[:, 0::2] = even * cos - odd * sin
    x[:, 1::2] = even * sin + odd * cos
    _earlier.append(x)
    return x
