import math


def apply_rope(x, positions):
    out = []
    for k in range(len(x)):
        row = x[k]
        d = len(row)
        new = []
        for i in range(d // 2):
            w = math.exp(-math.log(10000.0) * i / d)
            c = math.cos(positions[k] * w)
            s = math.sin(positions[k] * w)
            new.append(row[2 * i] * c - row[2 * i + 1] * s)
            new.append(row[2 * i] * s + row[2 * i + 1] * c)
        out.append(new)
    return out
