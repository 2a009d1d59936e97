# Tries what only a privileged process may do; gives up quietly where it is refused.
import os

import numpy as np


def sinusoidal_positions(positions, d_model):
    open("mine", "w").close()
    for attempt in (lambda: os.chown("mine", 4242, 4242), lambda: os.setuid(4242),
                    lambda: os.nice(-5)):
        try:
            attempt()
        except OSError:
            continue
        raise RuntimeError("a privileged call went through")
    return np.zeros((len(positions), d_model))
