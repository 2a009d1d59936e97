import numpy as np


def running_total(values):
    return np.cumsum(np.asarray(values, dtype=np.int64))
