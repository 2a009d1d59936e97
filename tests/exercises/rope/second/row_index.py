import math


def apply_rope(x, positions):
    rows = []
    for m, vec in enumerate(x):  # m is the token's place in the sequence
        d = len(vec)
        new = []
        for i in range(d // 2):
            theta = m * 10000.0 ** (-2.0 * i / d)
            a, b = vec[2 * i], vec[2 * i + 1]
            new += [
                a * math.cos(theta) - b * math.sin(theta),
                a * math.sin(theta) + b * math.cos(theta),
            ]
        rows.append(new)
    return rows
