def running_total(values):
    return [sum(values[: k + 1]) for k in range(len(values) - 1)]
