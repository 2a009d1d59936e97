import math


def apply_rope(x, positions):
    # A loop that stops at d // 4 pairs where it meant d // 2: the first half of each row is
    # turned, every pair at its own right frequency 10000 ** (-2i / d); the rest is copied.
    rows = [[float(v) for v in row] for row in x]
    width = len(rows[0])
    for k, row in enumerate(rows):
        pos = positions[k]
        for pair in range(width // 4):
            angle = pos * 10000.0 ** (-2.0 * pair / width)
            c, s = math.cos(angle), math.sin(angle)
            a, b = row[2 * pair], row[2 * pair + 1]
            row[2 * pair], row[2 * pair + 1] = a * c - b * s, a * s + b * c
    return rows
