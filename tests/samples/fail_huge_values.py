# A table of values at the edge of float64, +1e308 and -1e308: wrong everywhere, and the
# grader's own arithmetic on it (differences, sums) overflows. The verdict must still come,
# and the grader must say nothing of its overflows on stderr.
import numpy as np


def sinusoidal_positions(positions, d_model):
    table = np.full((len(positions), d_model), 1e308)
    table[:, 1::2] = -1e308
    return table
