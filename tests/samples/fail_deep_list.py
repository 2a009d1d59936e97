# A list nested deeper than numpy has axes for: a wrong shape, not ragged rows.
def sinusoidal_positions(positions, d_model):
    table = [0.0]
    for _ in range(70):
        table = [table]
    return table
