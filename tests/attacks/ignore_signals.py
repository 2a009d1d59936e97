# Ignores every catchable signal and spins forever.
import signal

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM):
    signal.signal(sig, signal.SIG_IGN)


def sinusoidal_positions(positions, d_model):
    while True:
        pass
