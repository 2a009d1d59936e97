import math


def apply_rope(x, positions):
    # The pair loop runs over d // 8 pairs: a quarter of the columns turned, each pair at
    # 10000 ** (-2i / d) as the whole width has it (over the quarter, that reads as base 10).
    rows = [[float(v) for v in row] for row in x]
    width = len(rows[0])
    for k, row in enumerate(rows):
        pos = positions[k]
        for pair in range(width // 8):
            angle = pos / 10000.0 ** (2.0 * pair / width)
            c, s = math.cos(angle), math.sin(angle)
            a, b = row[2 * pair], row[2 * pair + 1]
            row[2 * pair], row[2 * pair + 1] = a * c - b * s, a * s + b * c
    return rows
