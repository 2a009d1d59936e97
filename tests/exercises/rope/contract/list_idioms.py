import math


def apply_rope(x, positions):
    # Written for the lists of version 1: an empty x tested as a list is.
    if not x:
        return []
    out = []
    for row, pos in zip(x, positions, strict=True):
        d = len(row)
        turned = []
        for i in range(d // 2):
            angle = pos * 10000 ** (-2 * i / d)
            a, b = row[2 * i], row[2 * i + 1]
            turned.append(a * math.cos(angle) - b * math.sin(angle))
            turned.append(a * math.sin(angle) + b * math.cos(angle))
        out.append(turned)
    return out
