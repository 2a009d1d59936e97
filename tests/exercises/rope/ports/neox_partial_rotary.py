import numpy as np


def apply_rope(x, positions):
    # GPT-NeoX with rotary_pct = 0.25: the first quarter of the columns rotated in the halves
    # layout, with frequencies over that quarter; the other columns passed through.
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    rot = max(2, int(d * 0.25) // 2 * 2)
    inv_freq = 1.0 / (10000 ** (np.arange(0, rot, 2).astype(np.float64) / rot))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq
    emb = np.concatenate((freqs, freqs), axis=-1)
    q_rot, q_pass = x[:, :rot], x[:, rot:]
    half = rot // 2
    rotated = np.concatenate((-q_rot[:, half:], q_rot[:, :half]), axis=-1)
    q_rot = q_rot * np.cos(emb) + rotated * np.sin(emb)
    return np.concatenate((q_rot, q_pass), axis=-1)
