def sinusoidal_positions(positions, d_model):
    return [["sin", "cos"] * (d_model // 2) for _ in positions]
