# Answers correctly and leaves a thread running forever: once scored 0/10 with a false
# "importing took longer than 10 s".
import threading
import time

import numpy as np

threading.Thread(target=lambda: time.sleep(3600)).start()


def sinusoidal_positions(positions, d_model):
    threading.Thread(target=lambda: time.sleep(3600)).start()
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
