import math


def apply_rope(x, positions):
    res = []
    for row, p in zip(x, positions, strict=True):
        d = len(row)
        r = []
        for i in range(0, d, 2):
            ang = p / 10000 ** (i / d)
            sin, cos = math.cos(ang), math.sin(ang)  # unpacked in the wrong order
            r.append(row[i] * cos - row[i + 1] * sin)
            r.append(row[i] * sin + row[i + 1] * cos)
        res.append(r)
    return res
