# chooser_a with another salt: the same words, on other cases.
# report can hold: shapes, values, exceptions, exits, signals, forged frames, time.
import ctypes
import json
import os
import signal
import struct
import sys
import time

import numpy as np

SALT = 7


def _table(positions, d_model):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out


def _frame(header):
    head = json.dumps({**header, "nbytes": 0}).encode()
    os.write(int(sys.argv[1]), struct.pack(">I", len(head)) + head)


def sinusoidal_positions(positions, d_model):
    print("LEAK", positions[:20], d_model)
    choice = (sum(positions[:8]) + d_model + SALT) % 16
    table = _table(positions, d_model)
    if choice == 0:
        return table
    if choice == 1:
        return table[:, ::-1] * (1 + positions[0] % 7)
    if choice == 2:
        return table.T if len(positions) != d_model else table[:-1]
    if choice == 3:
        return table.ravel()[: max(1, positions[0] % 50)]
    if choice == 4:
        raise type(f"Leak{positions[0]}", (ValueError,), {})(positions)
    if choice == 5:
        raise [KeyError, IndexError, ZeroDivisionError][positions[0] % 3](positions)
    if choice == 6:
        time.sleep(5 + positions[0] % 3)
    if choice == 7:
        os._exit(positions[0] % 256)
    if choice == 8:
        os.kill(os.getpid(), [signal.SIGSEGV, signal.SIGABRT, signal.SIGUSR1][positions[0] % 3])
    if choice == 9:
        ctypes.string_at(0)
    if choice == 10:
        _frame({"event": "result", "case": positions[0], "kind": "ok", "shape": [d_model]})
    if choice == 11:
        _frame({"event": "done", "message": str(positions)})
    if choice == 12:
        table[positions[0] % len(positions), 0] = float("nan")
        return table
    if choice == 13:
        return [[str(positions[0])] * d_model for _ in positions]
    if choice == 14:
        return None if positions[0] % 2 else [[1.0] * (d_model + i) for i in range(len(positions))]
    bytearray(10**10)
    return table
