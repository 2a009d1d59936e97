# Takes every byte its memory limit allows while it is imported and keeps them, then needs
# more in the call. The grader must say what happened (the memory limit), never a crash of
# its own code, which has to read the inputs in what the import left.
import numpy as np

HELD = []
size = 1 << 30
while size >= 64:
    try:
        HELD.append(np.ones(size // 8))
    except MemoryError:
        size //= 2


def sinusoidal_positions(positions, d_model):
    scratch = np.ones((256 << 20) // 8)  # more than the little the import left
    return np.zeros((len(positions), d_model)) + scratch[0]
