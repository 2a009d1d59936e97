import math


def apply_rope(x, positions):
    base = 1000.0
    out = []
    for k, row in enumerate(x):
        d = len(row)
        m = positions[k]
        new = list(row)
        for j in range(0, d, 2):
            theta = m / base ** (j / d)
            c, s = math.cos(theta), math.sin(theta)
            new[j] = row[j] * c - row[j + 1] * s
            new[j + 1] = row[j] * s + row[j + 1] * c
        out.append(new)
    return out
