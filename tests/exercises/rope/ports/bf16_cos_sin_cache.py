import numpy as np


def _to_bfloat16(a):
    # Round to the nearest bfloat16 (8 bits of mantissa), ties to even, as a model kept in
    # bfloat16 holds its cos/sin cache.
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    freq = 10000.0 ** (-np.arange(0, d, 2) / d)
    angle = np.repeat(np.outer(np.asarray(positions, dtype=np.float64), freq), 2, axis=1)
    turned = np.empty_like(x)
    turned[:, 0::2] = -x[:, 1::2]
    turned[:, 1::2] = x[:, 0::2]
    return x * _to_bfloat16(np.cos(angle)) + turned * _to_bfloat16(np.sin(angle))
