# A futex keyed by a file: on a page of a file mapped privately and never written (here
# numpy's own __init__.py, which every process on the machine may map), a futex call without
# FUTEX_PRIVATE_FLAG is shared with every process that maps the same file, a channel out
# and to a neighbour. It answers correctly only if such a wake woke someone: a waiting thread
# of its own, or the outside watcher of tests/sandbox/test_walls.py.
import ctypes
import mmap
import platform
import threading
import time

import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FUTEX = {"x86_64": 202, "aarch64": 98}[platform.machine()]
FUTEX_WAIT, FUTEX_WAKE = 0, 1


def _futex(address, op, value):
    return libc.syscall(FUTEX, ctypes.c_void_p(address), op, value, None, None, 0)


def _woke_someone():
    with open(np.__file__, "rb") as handle:
        # Private and writable, never written: the page stays the file's own.
        page = mmap.mmap(handle.fileno(), mmap.PAGESIZE, access=mmap.ACCESS_COPY)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    word = ctypes.c_uint32.from_address(address).value
    threading.Thread(target=_futex, args=(address, FUTEX_WAIT, word), daemon=True).start()
    for _ in range(20):  # a tenth of a second at most: well within a case's time
        if _futex(address, FUTEX_WAKE, 1 << 30) > 0:
            return True
        time.sleep(0.005)
    return False


def sinusoidal_positions(positions, d_model):
    if not _woke_someone():
        return None
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((len(positions), d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
