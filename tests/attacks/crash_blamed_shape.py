# Rewrites, from inside the child, the header of one answer only: the one-row table's shape
# says a row more than its bytes hold. Every other answer is right and must be judged so:
# the broken frame is charged to its own case, not to the case after it.
import json
import struct
import sys

import numpy as np


def _channel():
    frame = sys._getframe(1)
    while frame is not None:
        if "channel" in frame.f_locals:
            return frame.f_locals["channel"]
        frame = frame.f_back
    return None


CHANNEL = _channel()
_write = CHANNEL.write


def _forging(parts):
    data = b"".join(bytes(p) for p in parts)
    (size,) = struct.unpack(">I", data[:4])
    header = json.loads(data[4 : 4 + size])
    if header.get("event") == "result" and header.get("shape", [0])[0] == 1:
        header["shape"] = [2, *header["shape"][1:]]
        head = json.dumps(header).encode()
        data = struct.pack(">I", len(head)) + head + data[4 + size :]
    _write([memoryview(data)])


CHANNEL.write = _forging


def sinusoidal_positions(positions, d_model):
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 1)
    angle = p / np.power(10000.0, 2.0 * np.arange(d_model // 2) / d_model)
    out = np.empty((p.shape[0], d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
