import math


def apply_rope(x, positions):
    # Loops, GPT-NeoX style: element j is paired with element j + d/2.
    out = []
    for row, pos in zip(x, positions, strict=True):
        d = len(row)
        half = d // 2
        res = [0.0] * d
        for j in range(half):
            ang = pos * 10000 ** (-2 * j / d)
            c, s = math.cos(ang), math.sin(ang)
            res[j] = row[j] * c - row[j + half] * s
            res[j + half] = row[j + half] * c + row[j] * s
        out.append(res)
    return out
