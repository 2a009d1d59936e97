def running_total(values):
    out, total = [], 0
    for value in values:
        out.append(total)
        total += value
    return out
