"""Confine the current process before it runs untrusted code: limits, Landlock, seccomp.

Stdlib only (ctypes for the three syscall families Python does not wrap), because this file
runs inside the sandbox, where the rest of the grader package is not even visible. Each
function is also importable by the parent, which uses ``landlock_abi`` to choose a backend.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
from collections.abc import Iterable
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Per-architecture syscall numbers and the audit arch value seccomp sees.
ARCHES: dict[str, dict[str, int]] = {
    "x86_64": {
        "audit": 0xC000003E,
        "socket": 41,
        "clone": 56,
        "fork": 57,
        "vfork": 58,
        "execve": 59,
        "kill": 62,
        "ptrace": 101,
        "setpgid": 109,
        "setsid": 112,
        "capset": 126,
        "execveat": 322,
        "clone3": 435,
    },
    "aarch64": {
        "audit": 0xC00000B7,
        "socket": 198,
        "clone": 220,
        "execve": 221,
        "kill": 129,
        "ptrace": 117,
        "setpgid": 154,
        "setsid": 157,
        "capset": 91,
        "execveat": 281,
        "clone3": 435,
    },
}
LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_TRUNCATE, FS_IOCTL_DEV = 1 << 14, 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
CLONE_THREAD = 0x00010000
EPERM, ENOSYS = 1, 38


def _syscall(number: int, *args: Any) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def _arch() -> dict[str, int] | None:
    return ARCHES.get(platform.machine())


def seccomp_supported() -> bool:
    """Return True where the seccomp filter knows this architecture's syscall numbers."""
    return _arch() is not None


def landlock_abi() -> int:
    """Return the kernel's Landlock ABI version, 0 where Landlock is missing or disabled."""
    try:
        return _syscall(
            LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM, ABI 1
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def apply_landlock(*, read: Iterable[str], write: Iterable[str]) -> int:
    """Allow reading ``read`` and everything under ``write``; deny every other path.

    Also deny TCP (ABI 4+) and signals or abstract sockets to processes outside (ABI 6+).
    Returns the ABI version used; raises OSError where Landlock cannot be applied.
    """
    abi = landlock_abi()
    if abi < 1:
        raise OSError(ENOSYS, "Landlock is not available")
    handled = _fs_rights(abi)
    net = 3 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("<QQQ", handled, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = _syscall(
        LANDLOCK_CREATE_RULESET,
        ctypes.c_char_p(attr[:size]),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),
    )
    file_rights = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (FS_TRUNCATE if abi >= 3 else 0)
    try:
        for paths, rights in ((read, FS_EXECUTE | FS_READ_FILE | FS_READ_DIR), (write, handled)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    allowed = rights & handled
                    if not os.path.isdir(path):
                        allowed &= file_rights
                    rule = struct.pack("<Qi", allowed, fd)
                    _syscall(
                        LANDLOCK_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.c_char_p(rule),
                        ctypes.c_uint32(0),
                    )
                finally:
                    os.close(fd)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _syscall(LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi


def _prctl(option: int, arg: int, ptr: Any = None) -> None:
    result = _libc.prctl(
        ctypes.c_int(option), ctypes.c_ulong(arg), ptr, ctypes.c_ulong(0), ctypes.c_ulong(0)
    )
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def world_reachable(path: str) -> bool:
    """Return True if a user with no special rights can reach and read ``path``."""
    real = os.path.realpath(path)
    parts = real.split("/")
    for i in range(2, len(parts)):
        if not os.stat("/".join(parts[:i])).st_mode & 0o001:  # search bit on each parent
            return False
    mode = os.stat(real).st_mode
    needed = 0o005 if os.path.isdir(real) else 0o004
    return mode & needed == needed


def drop_privileges(plan: str, uid: int) -> None:
    """Leave root as the parent planned: "uid" becomes ``uid``, "capabilities" drops them all.

    The parent plans ("uid" only where the interpreter is world-readable, see
    world_reachable) because it must hand the temporary folder to the same identity.
    """
    if plan == "uid":
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root to another uid clears every capability
    elif plan == "capabilities":
        arch = _arch()
        if arch is None:
            raise OSError(ENOSYS, "cannot drop capabilities on this architecture")
        header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = bytes(24)  # two {effective, permitted, inheritable} sets, all zero
        _syscall(arch["capset"], ctypes.c_char_p(header), ctypes.c_char_p(data))


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def apply_seccomp(*, deny_kill: bool) -> bool:
    """Forbid new processes, exec, sockets, ptrace and new sessions; allow threads.

    Returns False on an architecture this filter does not know (nothing is applied).
    """
    arch = _arch()
    if arch is None:
        return False
    ld_w_abs, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    deny, nosys = 0x00050000 | EPERM, 0x00050000 | ENOSYS
    denied = ["socket", "fork", "vfork", "execve", "execveat", "ptrace", "setsid", "setpgid"]
    if deny_kill:
        # Without Landlock's signal scoping, no signal may leave the process at all.
        denied += [
            "kill",
            "tkill",
            "tgkill",
            "rt_sigqueueinfo",
            "rt_tgsigqueueinfo",
            "pidfd_send_signal",
        ]
    numbers = [arch[name] for name in denied if name in arch]
    prog = [
        _bpf(ld_w_abs, 4),  # arch
        _bpf(jeq, arch["audit"], 1, 0),
        _bpf(ret, kill),
        _bpf(ld_w_abs, 0),  # syscall number
    ]
    for nr in numbers:
        prog += [_bpf(jeq, nr, 0, 1), _bpf(ret, deny)]
    # clone3 hides its flags behind a pointer: say it does not exist, so libc uses clone.
    prog += [_bpf(jeq, arch["clone3"], 0, 1), _bpf(ret, nosys)]
    # clone: threads (CLONE_THREAD) are fine, new processes are not.
    prog += [
        _bpf(jeq, arch["clone"], 0, 4),
        _bpf(ld_w_abs, 16),  # args[0], low 32 bits: the flags
        _bpf(jset, CLONE_THREAD, 0, 1),
        _bpf(ret, allow),
        _bpf(ret, deny),
        _bpf(ret, allow),
    ]
    filters = b"".join(prog)
    buf = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("<HxxxxxxQ", len(prog), ctypes.addressof(buf))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog))
    return True


def apply_limits(limits: dict[str, int]) -> None:
    """Set the resource limits the parent asked for, hard and soft."""
    cpu = limits["cpu_seconds"]
    # Soft limit first: SIGXCPU names the cause; the hard one a second later cannot be caught.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
