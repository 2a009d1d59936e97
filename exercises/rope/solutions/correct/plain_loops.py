import math


def apply_rope(x, positions):
    result = []
    for row, pos in zip(x, positions):
        d = len(row)
        new_row = [0.0] * d
        for i in range(d // 2):
            theta = pos * 10000 ** (-2 * i / d)
            c = math.cos(theta)
            s = math.sin(theta)
            a = row[2 * i]
            b = row[2 * i + 1]
            new_row[2 * i] = a * c - b * s
            new_row[2 * i + 1] = a * s + b * c
        result.append(new_row)
    return result
