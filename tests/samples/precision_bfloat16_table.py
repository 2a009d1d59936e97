import numpy as np


def sinusoidal_positions(positions, d_model):
    # The right table, then kept in bfloat16 (8 bits of mantissa, ties to even), as a model
    # run in bfloat16 keeps it.
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    table = np.empty((len(positions), d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)
    bits = table.astype(np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)
