def running_total(values):
    out, total = [], 0
    for value in reversed(values):
        total += value
        out.append(total)
    return out[::-1]
