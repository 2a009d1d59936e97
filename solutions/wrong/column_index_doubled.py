import math


def sinusoidal_positions(positions, d_model):
    pe = [[0.0] * d_model for _ in positions]
    for row, pos in enumerate(positions):
        for i in range(0, d_model, 2):
            pe[row][i] = math.sin(pos / (10000 ** ((2 * i) / d_model)))
            pe[row][i + 1] = math.cos(pos / (10000 ** ((2 * (i + 1)) / d_model)))
    return pe
