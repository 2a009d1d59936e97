def sinusoidal_positions(positions, d_model):
    while True:
        pass
