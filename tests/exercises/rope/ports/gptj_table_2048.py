import numpy as np

MAX_POSITIONS = 2048
_tables = {}


def _table(dim):
    # GPT-J precomputes its sin/cos table for max_position_embeddings = 2048 positions.
    if dim not in _tables:
        inv_freq = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
        sinusoid = np.arange(MAX_POSITIONS, dtype=np.float64)[:, None] * inv_freq
        _tables[dim] = (np.sin(sinusoid), np.cos(sinusoid))
    return _tables[dim]


def apply_rope(x, positions):
    x = np.asarray(x, dtype=np.float64)
    sin_table, cos_table = _table(x.shape[1])
    idx = np.asarray(positions)
    for p in idx:
        if p >= MAX_POSITIONS:
            raise IndexError(f"index {p} is out of bounds for axis 0 with size {MAX_POSITIONS}")
    sin, cos = sin_table[idx], cos_table[idx]
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out
