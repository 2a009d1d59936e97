# Starts as many threads with small stacks as it can, and holds them.
import threading
import time

import numpy as np

held = []


def sinusoidal_positions(positions, d_model):
    threading.stack_size(32 * 1024)
    try:
        while len(held) < 5000:
            t = threading.Thread(target=time.sleep, args=(2,), daemon=True)
            t.start()
            held.append(t)
    except RuntimeError:
        pass
    print("held", len(held), "threads")
    if len(held) > 64:
        raise RuntimeError(f"held {len(held)} threads")
    return np.zeros((len(positions), d_model))
