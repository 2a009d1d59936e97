# Leaves a SysV message queue, shared memory and a key in the user keyring for whoever runs
# next, and looks for what an earlier run of itself left.
import ctypes

import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.shmat.restype = ctypes.c_void_p
KEY, IPC_CREAT = 0x5EC12, 0o1000
ADD_KEY, REQUEST_KEY, KEY_SPEC_USER_KEYRING = 248, 249, -4


def found_earlier():
    found = []
    if libc.msgget(KEY, 0) >= 0:
        found.append("message queue")
    if libc.shmget(KEY, 0, 0) >= 0:
        found.append("shared memory")
    if libc.syscall(REQUEST_KEY, b"user", b"grader-walls-leftover", None, 0) >= 0:
        found.append("key")
    return found


def leave_behind():
    left = []
    if libc.msgget(KEY, IPC_CREAT | 0o666) >= 0:
        left.append("message queue")
    shm = libc.shmget(KEY, 256 << 20, IPC_CREAT | 0o666)
    if shm >= 0:
        left.append("shared memory")
    payload = b"LEAK"
    if libc.syscall(ADD_KEY, b"user", b"grader-walls-leftover", payload, len(payload),
                    KEY_SPEC_USER_KEYRING) >= 0:
        left.append("key")
    return left


def sinusoidal_positions(positions, d_model):
    found = found_earlier()
    if found:
        raise RuntimeError(f"found what an earlier submission left: {found}")
    left = leave_behind()
    if left:
        raise RuntimeError(f"left behind for the next submission: {left}")
    return np.zeros((len(positions), d_model))
