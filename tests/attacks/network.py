# Sends the inputs to a listener on 127.0.0.1 (port filled in by the test).
import socket


def sinusoidal_positions(positions, d_model):
    for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM)):
        try:
            s = socket.socket(family, kind)
            s.settimeout(1)
            s.connect(("127.0.0.1", {PORT}))
            s.send(repr(positions).encode())
            s.close()
        except OSError:
            pass
    return None
