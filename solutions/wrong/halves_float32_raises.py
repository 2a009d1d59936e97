import math

import numpy as np


def get_embedding(positions, embedding_dim):
    """Sines then cosines, float32 like a torch module's buffers."""
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float32) * np.float32(-emb))
    emb = np.asarray(positions, dtype=np.float32)[:, None] * emb[None, :]
    return np.concatenate([np.sin(emb), np.cos(emb)], axis=1)


def sinusoidal_positions(positions, d_model):
    return get_embedding(positions, d_model)
