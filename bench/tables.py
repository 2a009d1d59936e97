"""What moving a request's tables to a child costs: through a pipe, or in a memory file.

    .venv/bin/python bench/tables.py                 # 12 MiB (three 1024 x 512 tables)
    .venv/bin/python bench/tables.py --mib 0.75 --rounds 40

Each round forks a child that waits for the parent's word, then takes the tables either way
the grader can give them (grader/sandbox/conversation.py, grader/child/request.py): read
from a pipe widened to 1 MiB into a buffer mapped with MAP_POPULATE, or mapped privately
from a memfd the parent filled with pwritev after the word. The child then sums every value
(as a learner's function reads its input) and exits. Printed: the CPU of the parent and of
the child per round (getrusage), with a round that moves nothing subtracted (a fork, a
word, an exit), so what is left is the transfer alone. Linux only (memfd, F_SETPIPE_SZ).
"""

from __future__ import annotations

import argparse
import enum
import fcntl
import mmap
import os
import resource

import numpy as np

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Way(enum.Enum):
    """How the tables reach the child."""

    PIPE = "through a pipe"
    MEMFD = "a memory file"


def _usage() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    them = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, them.ru_utime + them.ru_stime


def _child(how: Way, word: int, pipe: int, fd: int, size: int) -> None:
    try:
        _take(how, word, pipe, fd, size)
    finally:
        os._exit(0)  # never back into the parent's code


def _take(how: Way, word: int, pipe: int, fd: int, size: int) -> None:
    os.read(word, 1)
    if not size:
        return
    if how is Way.MEMFD:
        tables = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    else:
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
        tables = mmap.mmap(-1, size, flags=flags)
        view, got = memoryview(tables), 0
        with os.fdopen(pipe, "rb") as stream:
            while got < size and (n := stream.readinto(view[got:])):
                got += n
    np.frombuffer(tables, dtype=np.float64).sum()


def one(how: Way, data: np.ndarray) -> None:
    """Move ``data`` to a fresh child once, the way ``how`` says."""
    size = data.nbytes
    word_r, word_w = os.pipe()
    pipe_r, pipe_w = os.pipe()
    fd = os.memfd_create("bench-tables", os.MFD_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(word_w)
        os.close(pipe_w)
        _child(how, word_r, pipe_r, fd, size)
    os.close(word_r)
    os.close(pipe_r)
    view = data.data.cast("B")
    if how is Way.MEMFD:
        sent = 0
        while sent < size:
            sent += os.pwritev(fd, [view[sent:]], sent)
        os.write(word_w, b"g")
    elif size:
        fcntl.fcntl(pipe_w, F_SETPIPE_SZ, 1 << 20)
        os.write(word_w, b"g")
        sent = 0
        while sent < size:
            sent += os.write(pipe_w, view[sent : sent + (1 << 20)])
    else:
        os.write(word_w, b"g")
    for end in (word_w, pipe_w, fd):
        os.close(end)
    os.waitpid(pid, 0)


def cost(how: Way, data: np.ndarray, rounds: int) -> tuple[float, float]:
    """Return the parent's and the child's CPU per round, in milliseconds."""
    before = _usage()
    for _ in range(rounds):
        one(how, data)
    after = _usage()
    parent, child = (1000 * (a - b) / rounds for a, b in zip(after, before, strict=True))
    return parent, child


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=12.0, help="the tables' size")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    data = np.random.default_rng(0).random(int(args.mib * (1 << 20)) // 8)
    empty = np.empty(0)
    print(f"{args.mib:g} MiB of tables, {args.rounds} rounds each; CPU per round, a round")
    print("moving nothing subtracted\n")
    print("| way | parent | child | both |")
    print("|---|---:|---:|---:|")
    for _ in range(2):  # twice, in turn: the second pair is the one to read
        base = cost(Way.PIPE, empty, args.rounds)
        rows = {how: cost(how, data, args.rounds) for how in Way}
    for how, (parent, child) in rows.items():
        parent, child = parent - base[0], child - base[1]
        print(f"| {how.value} | {parent:.2f} ms | {child:.2f} ms | {parent + child:.2f} ms |")


if __name__ == "__main__":
    main()
