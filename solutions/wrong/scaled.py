import numpy as np


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((len(positions), d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    # Keep the encoding on the scale of the embeddings it is added to.
    return pe * d_model**-0.5
