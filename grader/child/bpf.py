"""The seccomp allowlist as a BPF program: allowlist.py's names and numbers, assembled by hand.

Stdlib only, like confine.py, which loads the program: both run inside the sandbox.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable

if __package__:  # imported by the parent, as part of the grader
    from grader.child import allowlist as sc
else:  # in the child, found beside this file (see run.py)
    import allowlist as sc  # type: ignore[import-not-found,no-redef]


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
RET_EPERM, RET_ENOSYS = 0x00050000 | sc.EPERM, 0x00050000 | sc.ENOSYS
RET_ZERO = 0x00050000  # the call is not made and returns 0
NR, ARCH, ARG0, ARG1, ARG3 = 0, 4, 16, 24, 40  # offsets in struct seccomp_data (low words)


def _one_of(nr: int, offset: int, values: Iterable[int]) -> list[bytes]:
    """Allow syscall ``nr`` when the argument at ``offset`` is one of ``values``, else sc.EPERM."""
    values = list(values)
    body = [_bpf(LD_W_ABS, offset)]
    for value in values:
        body += [_bpf(JEQ, value, 0, 1), _bpf(RET, RET_ALLOW)]
    body += [_bpf(RET, RET_EPERM)]
    # Not this syscall: skip the body, which always returns, so the number is still loaded.
    return [_bpf(JEQ, nr, 0, len(body)), *body]


def _futex_rules(numbers: dict[str, int]) -> list[bytes]:
    """futex with FUTEX_PRIVATE_FLAG only, else nothing done (see allowlist.FUTEX_PRIVATE_FLAG);
    set_robust_list never made. First in the filter: futex is the hottest call a thread makes."""
    return [
        _bpf(JEQ, numbers["futex"], 0, 4),
        _bpf(LD_W_ABS, ARG1),
        _bpf(JSET, sc.FUTEX_PRIVATE_FLAG, 0, 1),
        _bpf(RET, RET_ALLOW),
        _bpf(RET, RET_ZERO),
        _bpf(JEQ, numbers["set_robust_list"], 0, 1),
        _bpf(RET, RET_ZERO),
    ]


def _checked_rules(numbers: dict[str, int]) -> list[bytes]:
    prog: list[bytes] = []
    # clone3 hides its flags behind a pointer: say it does not exist, so libc uses clone.
    prog += [_bpf(JEQ, numbers["clone3"], 0, 1), _bpf(RET, RET_ENOSYS)]
    # clone: a thread (sc.CLONE_THREAD) without a new namespace; never a new process.
    prog += [
        _bpf(JEQ, numbers["clone"], 0, 5),
        _bpf(LD_W_ABS, ARG0),
        _bpf(JSET, sc.CLONE_NAMESPACES, 2, 0),
        _bpf(JSET, sc.CLONE_THREAD, 0, 1),
        _bpf(RET, RET_ALLOW),
        _bpf(RET, RET_EPERM),
    ]
    prog += _one_of(numbers["ioctl"], ARG1, sc.IOCTLS)
    prog += _one_of(numbers["prctl"], ARG0, sc.PRCTLS)
    prog += _one_of(numbers["prlimit64"], ARG0, [0])  # its own limits only
    prog += _one_of(numbers["fcntl"], ARG1, sc.FCNTLS)
    prog += [
        _bpf(JEQ, numbers["mmap"], 0, 4),
        _bpf(LD_W_ABS, ARG3),
        _bpf(JSET, sc.MAP_SHARED, 1, 0),
        _bpf(RET, RET_ALLOW),
        _bpf(RET, RET_EPERM),
    ]
    if "arch_prctl" in numbers:  # x86_64: glibc sets the thread pointer of a new thread
        prog += _one_of(numbers["arch_prctl"], ARG0, [sc.ARCH_SET_FS, sc.ARCH_GET_FS])
    return prog


# Cached: the batch template builds both variants once, and every fork it makes inherits them.
@functools.lru_cache(maxsize=4)
def seccomp_program(machine: str, *, allow_signals: bool) -> bytes | None:
    """Return the allowlist as a BPF program for ``machine``, or None if it is not known."""
    arch = sc.ARCHES.get(machine)
    if arch is None:
        return None
    audit, numbers = arch
    names = [name for _, group in sc.ALLOWED for name in group.split()]
    if allow_signals:
        names += sc.SIGNALLING.split()
    prog = [
        _bpf(LD_W_ABS, ARCH),
        # Another ABI (32-bit calls on a 64-bit kernel) has other numbers: kill outright.
        _bpf(JEQ, audit, 1, 0),
        _bpf(RET, RET_KILL_PROCESS),
        _bpf(LD_W_ABS, NR),
        *_futex_rules(numbers),
    ]
    # x32 calls (number | 0x40000000) share x86_64's audit value and match nothing here.
    for name in names:
        if name in numbers:
            prog += [_bpf(JEQ, numbers[name], 0, 1), _bpf(RET, RET_ALLOW)]
    prog += _checked_rules(numbers)
    prog.append(_bpf(RET, RET_EPERM))
    return b"".join(prog)
