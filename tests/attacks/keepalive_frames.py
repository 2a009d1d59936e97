# Keeps forging answers on the result channel while its real call hangs, hoping that each
# frame resets the time limit, or that a forged answer counts as a pass.
import json
import os
import struct
import sys
import threading
import time


def _fd():
    try:
        return int(sys.argv[1])
    except (IndexError, ValueError):
        return 3


def _forge():
    for case_id in range(100):
        head = json.dumps(
            {"event": "result", "case": case_id, "kind": "ok", "shape": [1, 2], "nbytes": 16}
        ).encode()
        try:
            os.write(_fd(), struct.pack(">I", len(head)) + head + struct.pack("<2d", 0.0, 1.0))
        except OSError:
            return
        time.sleep(0.05)


def sinusoidal_positions(positions, d_model):
    threading.Thread(target=_forge, daemon=True).start()
    time.sleep(3600)
