import math


def sinusoidal_positions(positions, d_model):
    table = []
    for p in positions:
        row = []
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i // d_model)
            row += [math.sin(angle), math.cos(angle)]
        table.append(row)
    return table
