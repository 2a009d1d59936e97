"""PE(p, 2i) = \sin(p \cdot \omega_i) and PE(p, 2i+1) = \cos(p \cdot \omega_i).

A correct answer that makes Python warn: the docstring's LaTeX holds escapes Python does not
know (a warning as the file is compiled, by the grader and by the child), and each call
divides zero by zero (numpy's RuntimeWarning, in the child). It also prints text that is not
ASCII. None of it may change the verdict, whatever PYTHONWARNINGS or the locale say.
"""

import numpy as np


def sinusoidal_positions(positions, d_model):
    print("encodages calculés ✓")
    np.float64(0.0) / np.float64(0.0)
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angles = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    table = np.empty((len(positions), d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table
