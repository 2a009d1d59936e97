# Writes far more output than anyone should keep.
import os
import sys


def sinusoidal_positions(positions, d_model):
    chunk = "flood " * 10000
    for _ in range(300):
        sys.stdout.write(chunk)
        os.write(2, chunk.encode())
    return [[0.0] * d_model for _ in positions]
