import math

import numpy as np


def timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=True, downscale_freq_shift=1,
                       max_period=10000):
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * np.arange(half_dim, dtype=np.float32)
    exponent = exponent / np.float32(half_dim - downscale_freq_shift)
    emb = np.exp(exponent)
    emb = np.asarray(timesteps)[:, None].astype(np.float32) * emb[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=-1)
    if flip_sin_to_cos:
        emb = np.concatenate([emb[:, half_dim:], emb[:, :half_dim]], axis=-1)
    return emb


def sinusoidal_positions(positions, d_model):
    with np.errstate(divide="ignore", invalid="ignore"):
        return timestep_embedding(positions, d_model)
