import math


def apply_rope(x, positions):
    # cos/sin cache laid out [f0, f1, ..., f0, f1, ...] per column, applied to adjacent pairs.
    out = []
    for row, p in zip(x, positions, strict=True):
        d = len(row)
        h = d // 2
        theta = [p * 10000 ** (-2 * (j % h) / d) for j in range(d)]
        new = []
        for j in range(d):
            partner = -row[j + 1] if j % 2 == 0 else row[j - 1]
            new.append(row[j] * math.cos(theta[j]) + partner * math.sin(theta[j]))
        out.append(new)
    return out
