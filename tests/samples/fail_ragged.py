def sinusoidal_positions(positions, d_model):
    return [[0.0] * (d_model if k % 2 == 0 else d_model - 1) for k, _ in enumerate(positions)]
