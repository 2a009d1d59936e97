import numpy as np


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def apply_rope(x, positions):
    # Qwen2 as the Hugging Face port ships it: rope_theta = 1e6, the halves layout, and
    # inv_freq kept in float32 (angles multiplied out in float32 too).
    x = np.asarray(x, dtype=np.float64)
    dim = x.shape[-1]
    inv_freq = 1.0 / (1000000.0 ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
    inv_freq = inv_freq.astype(np.float32)
    freqs = np.asarray(positions).astype(np.float32)[:, None] * inv_freq[None, :]
    emb = np.concatenate((freqs, freqs), axis=-1)
    cos, sin = np.cos(emb).astype(np.float64), np.sin(emb).astype(np.float64)
    return x * cos + rotate_half(x) * sin
