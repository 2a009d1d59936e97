# Two copies graded at once: each listens on a loopback port and sends to it, so that one
# hears the other (port filled in by the test).
import socket
import time

import numpy as np


def sinusoidal_positions(positions, d_model):
    try:
        me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        me.settimeout(0.05)
    except OSError:
        return np.zeros((len(positions), d_model))
    port = {PORT} + 1
    try:
        me.bind(("127.0.0.1", port))
        listening = True
    except OSError:
        listening = False  # the neighbour holds it: talk to it
    for _ in range(10):
        try:
            me.sendto(b"LEAK hello neighbour", ("127.0.0.1", port))
            if listening:
                me.recv(100)
                raise RuntimeError("heard a neighbour")
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("made a UDP socket")
