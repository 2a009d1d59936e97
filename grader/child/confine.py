"""Confine the current process before it runs untrusted code: limits, Landlock, seccomp.

Stdlib only (ctypes for the three syscall families Python does not wrap), because this file
runs inside the sandbox, where the rest of the grader package is not even visible. Each
function is also importable by the parent, which uses ``landlock_abi`` to choose a backend.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import resource
import signal
import struct
from collections.abc import Iterable
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# Looked up here, in the template, rather than first in every fork.
_libc.prctl.restype = ctypes.c_int

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# The seccomp allowlist: every system call a child may make once its submission is imported,
# grouped by purpose, traced with strace over correct, wrong, broken and hostile submissions
# under both backends (bench/syscalls.py). Everything else fails with EPERM: sockets of every
# family, io_uring, SysV IPC, POSIX message queues, keyrings, bpf, userfaultfd, perf events,
# ptrace and process_vm_*, pidfd_getfd, memfd_create, mount and namespace calls, exec, new
# processes, personality, and whatever a kernel adds later.
ALLOWED: tuple[tuple[str, str], ...] = (
    # Hot calls first: the filter tries the groups in this order.
    ("memory: the allocator, numpy's buffers", "brk munmap mremap mprotect madvise mincore"),
    (
        "threads: Python and numpy threads and what they wait on (clone is checked below)",
        "futex set_robust_list get_robust_list rseq set_tid_address gettid sched_yield "
        "sched_getaffinity sched_getparam sched_getscheduler sched_get_priority_max "
        "sched_get_priority_min membarrier exit exit_group",
    ),
    (
        "files: reading what Landlock or bwrap lets it see, writing in its own folder",
        "read write pread64 pwrite64 readv writev preadv pwritev preadv2 pwritev2 open openat "
        "openat2 close close_range lseek fstat stat lstat newfstatat statx statfs fstatfs access "
        "faccessat faccessat2 readlink readlinkat getdents64 dup dup2 dup3 pipe pipe2 "
        "ftruncate truncate fsync fdatasync fallocate mkdir mkdirat rmdir unlink unlinkat rename "
        "renameat renameat2 chdir fchdir umask sendfile copy_file_range",
    ),
    (
        "clocks, sleeping and randomness",
        "clock_gettime clock_getres gettimeofday time nanosleep clock_nanosleep getrandom",
    ),
    (
        "signals delivered to itself: handlers, masks, the time limit's SIGXCPU",
        "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend rt_sigtimedwait "
        "sigaltstack restart_syscall pause",
    ),
    (
        "waiting on its own descriptors (selectors, asyncio without sockets)",
        "poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait "
        "epoll_pwait2 eventfd2",
    ),
    (
        "reading its own identity and usage (os, resource, platform)",
        "getpid getppid getuid geteuid getgid getegid getresuid getresgid getgroups getpgid "
        "getpgrp getsid getpriority getrlimit getrusage getcwd uname sysinfo times capget",
    ),
)
# Allowed only with the arguments checked in _checked_rules: threads but no process or
# namespace, terminal queries, thread names, its own limits.
CHECKED = ("clone", "clone3", "ioctl", "prctl", "arch_prctl", "prlimit64", "fcntl", "mmap")
# Sending signals: allowed where they cannot reach outside (bwrap's PID namespace, Landlock's
# signal scope from ABI 6), refused otherwise.
SIGNALLING = "kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal"

# Syscall numbers, taken from libseccomp's tables (tests/sandbox/test_walls.py checks them against
# libseccomp where it is installed), and the audit arch value seccomp sees. A name missing
# from an architecture (aarch64 has no open, stat, dup2...) is simply not in its filter.
# fmt: off
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6,
            "poll": 7, "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12,
            "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16,
            "pread64": 17, "pwrite64": 18, "readv": 19, "writev": 20, "access": 21, "pipe": 22,
            "select": 23, "sched_yield": 24, "mremap": 25, "mincore": 27, "madvise": 28, "dup": 32,
            "dup2": 33, "pause": 34, "nanosleep": 35, "getpid": 39, "sendfile": 40, "clone": 56,
            "exit": 60, "kill": 62, "uname": 63, "fcntl": 72, "fsync": 74, "fdatasync": 75,
            "truncate": 76, "ftruncate": 77, "getcwd": 79, "chdir": 80, "fchdir": 81, "rename": 82,
            "mkdir": 83, "rmdir": 84, "unlink": 87, "readlink": 89, "chmod": 90, "fchmod": 91,
            "umask": 95, "gettimeofday": 96, "getrlimit": 97, "getrusage": 98, "sysinfo": 99,
            "times": 100, "getuid": 102, "getgid": 104, "geteuid": 107, "getegid": 108,
            "getppid": 110, "getpgrp": 111, "getgroups": 115, "getresuid": 118, "getresgid": 120,
            "getpgid": 121, "getsid": 124, "capget": 125, "capset": 126, "rt_sigpending": 127,
            "rt_sigtimedwait": 128, "rt_sigqueueinfo": 129, "rt_sigsuspend": 130,
            "sigaltstack": 131, "statfs": 137, "fstatfs": 138, "getpriority": 140,
            "sched_getparam": 143, "sched_getscheduler": 145, "sched_get_priority_max": 146,
            "sched_get_priority_min": 147, "prctl": 157, "arch_prctl": 158, "mount": 165,
            "gettid": 186, "tkill": 200, "time": 201, "futex": 202, "sched_getaffinity": 204,
            "epoll_create": 213, "getdents64": 217, "set_tid_address": 218, "restart_syscall": 219,
            "clock_gettime": 228, "clock_getres": 229, "clock_nanosleep": 230, "exit_group": 231,
            "epoll_wait": 232, "epoll_ctl": 233, "tgkill": 234, "openat": 257, "mkdirat": 258,
            "newfstatat": 262, "unlinkat": 263, "renameat": 264, "readlinkat": 267,
            "fchmodat": 268, "faccessat": 269, "pselect6": 270, "ppoll": 271, "unshare": 272,
            "set_robust_list": 273, "get_robust_list": 274, "utimensat": 280, "epoll_pwait": 281,
            "fallocate": 285, "eventfd2": 290, "epoll_create1": 291, "dup3": 292, "pipe2": 293,
            "preadv": 295, "pwritev": 296, "rt_tgsigqueueinfo": 297, "prlimit64": 302,
            "renameat2": 316, "getrandom": 318, "membarrier": 324, "copy_file_range": 326,
            "preadv2": 327, "pwritev2": 328, "statx": 332, "rseq": 334, "pidfd_send_signal": 424,
            "clone3": 435, "close_range": 436, "openat2": 437, "faccessat2": 439,
            "epoll_pwait2": 441,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "getcwd": 17, "eventfd2": 19, "epoll_create1": 20, "epoll_ctl": 21, "epoll_pwait": 22,
            "dup": 23, "dup3": 24, "fcntl": 25, "ioctl": 29, "mkdirat": 34, "unlinkat": 35,
            "renameat": 38, "mount": 40, "statfs": 43, "fstatfs": 44, "truncate": 45,
            "ftruncate": 46, "fallocate": 47, "faccessat": 48, "chdir": 49, "fchdir": 50,
            "fchmod": 52, "fchmodat": 53, "openat": 56, "close": 57, "pipe2": 59, "getdents64": 61,
            "lseek": 62, "read": 63, "write": 64, "readv": 65, "writev": 66, "pread64": 67,
            "pwrite64": 68, "preadv": 69, "pwritev": 70, "sendfile": 71, "pselect6": 72,
            "ppoll": 73, "readlinkat": 78, "newfstatat": 79, "fstat": 80, "fsync": 82,
            "fdatasync": 83, "utimensat": 88, "capget": 90, "capset": 91, "exit": 93,
            "exit_group": 94, "set_tid_address": 96, "unshare": 97, "futex": 98,
            "set_robust_list": 99, "get_robust_list": 100, "nanosleep": 101, "clock_gettime": 113,
            "clock_getres": 114, "clock_nanosleep": 115, "sched_getscheduler": 120,
            "sched_getparam": 121, "sched_getaffinity": 123, "sched_yield": 124,
            "sched_get_priority_max": 125, "sched_get_priority_min": 126, "restart_syscall": 128,
            "kill": 129, "tkill": 130, "tgkill": 131, "sigaltstack": 132, "rt_sigsuspend": 133,
            "rt_sigaction": 134, "rt_sigprocmask": 135, "rt_sigpending": 136,
            "rt_sigtimedwait": 137, "rt_sigqueueinfo": 138, "rt_sigreturn": 139,
            "getpriority": 141, "getresuid": 148, "getresgid": 150, "times": 153, "getpgid": 155,
            "getsid": 156, "getgroups": 158, "uname": 160, "getrlimit": 163, "getrusage": 165,
            "umask": 166, "prctl": 167, "gettimeofday": 169, "getpid": 172, "getppid": 173,
            "getuid": 174, "geteuid": 175, "getgid": 176, "getegid": 177, "gettid": 178,
            "sysinfo": 179, "brk": 214, "munmap": 215, "mremap": 216, "clone": 220, "mmap": 222,
            "mprotect": 226, "mincore": 232, "madvise": 233, "rt_tgsigqueueinfo": 240,
            "prlimit64": 261, "renameat2": 276, "getrandom": 278, "membarrier": 283,
            "copy_file_range": 285, "preadv2": 286, "pwritev2": 287, "statx": 291, "rseq": 293,
            "pidfd_send_signal": 424, "clone3": 435, "close_range": 436, "openat2": 437,
            "faccessat2": 439, "epoll_pwait2": 441,
        },
    ),
}
# fmt: on
LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_TRUNCATE, FS_IOCTL_DEV = 1 << 14, 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
CLONE_THREAD = 0x00010000
# Namespace flags clone must not carry, even beside CLONE_THREAD.
CLONE_NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWIPC, CLONE_NEWNET = 0x20000, 0x10000000, 0x08000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 1 << 14, 1 << 18
EPERM, ENOSYS = 1, 38
# ioctl requests a child may make: is this a terminal, its size, close-on-exec, non-blocking,
# bytes waiting (TCGETS, TIOCGWINSZ, FIOCLEX, FIONCLEX, FIONBIO, FIONREAD).
IOCTLS = (0x5401, 0x5413, 0x5451, 0x5450, 0x5421, 0x541B)
# prctl options: get the thread's name, name an anonymous mapping (glibc 2.35+), read the
# dumpable and no-new-privileges flags. Not setting the thread's name: anyone on the machine
# reads it in /proc/PID/comm, a channel out.
PRCTLS = (16, 0x53564D41, 3, 39)
# mmap: private mappings only. A shared mapping of a file an outside process maps too gives
# both the same futex keys, a channel out (and in).
MAP_SHARED = 0x01
ARCH_SET_FS, ARCH_GET_FS = 0x1002, 0x1003
# fcntl: descriptors' flags and duplicates only (F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL,
# F_DUPFD_CLOEXEC). No locks: a lock on a file it may read shows in the machine's /proc/locks
# and to a neighbour's F_GETLK, a channel out. No leases, notifications or signal owners.
FCNTLS = (0, 1, 2, 3, 4, 1030)


def _syscall(number: int, *args: Any) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def _arch() -> tuple[int, dict[str, int]] | None:
    return ARCHES.get(platform.machine())


def seccomp_supported() -> bool:
    """Return True where the seccomp allowlist knows this architecture's syscall numbers."""
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


def become_user(uid: int) -> None:
    """Leave root for ``uid`` (and its group), which clears every capability.

    The parent chooses this only where the interpreter is world-readable (see
    world_reachable), because it must hand the temporary folder to the same identity.
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def drop_capabilities() -> None:
    """Stay uid 0 but drop every capability, where another uid could not run Python."""
    arch = _arch()
    if arch is None:
        raise OSError(ENOSYS, "cannot drop capabilities on this architecture")
    header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two {effective, permitted, inheritable} sets, all zero
    _syscall(arch[1]["capset"], ctypes.c_char_p(header), ctypes.c_char_p(data))


def die_with_parent(parent: int) -> None:
    """Be killed when the parent process dies; leave at once if it already has.

    Called after the last change of uid, gid or capabilities, since each of those clears
    the death signal. ``parent`` is the parent's pid as the spawner knew it: a parent that
    died before this line handed this process to another, which getppid() then names.
    """
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)  # nobody is left to read a status


CLONE_NEWPID = 0x20000000


def own_pid_namespace() -> bool:
    """Put every process this one starts from now on in a PID namespace that dies with it.

    With no sandbox nothing refuses fork and setsid, and a process in a session of its own
    escapes both the process group kill and this process's death signal: killed with the
    grader (SIGKILL included), it lived on until a later grader's start. The first fork
    after unshare is the namespace's init: it only waits, with this process as its parent
    and SIGKILL as its death signal, and when it dies the kernel kills everything else in
    the namespace. Needs CAP_SYS_ADMIN (the grader run as root); returns False where it is
    refused, and the pids cgroup stays the only net.
    """
    arch = _arch()
    if arch is None:
        return False
    try:
        _syscall(arch[1]["unshare"], ctypes.c_int(CLONE_NEWPID))
    except OSError:
        return False
    alive_r, alive_w = os.pipe()  # held by this process until the init is ready
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pid 1 of the new namespace
        try:
            os.close(alive_w)
            os.close(ready_r)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            # This process is the parent still, or it died before the line above: then
            # alive_w is closed everywhere, and nothing would ever send the death signal.
            import select

            poller = select.poll()
            poller.register(alive_r, select.POLLIN)
            if poller.poll(0):
                os._exit(0)
            os.write(ready_w, b"1")
            os.closerange(0, os.sysconf("SC_OPEN_MAX"))
            while True:
                signal.pause()
        finally:
            os._exit(0)
    os.close(alive_r)
    os.close(ready_w)
    try:
        ready = os.read(ready_r, 1) == b"1"
    finally:
        os.close(ready_r)
        os.close(alive_w)
    return ready


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
RET_EPERM, RET_ENOSYS = 0x00050000 | EPERM, 0x00050000 | ENOSYS
NR, ARCH, ARG0, ARG1, ARG3 = 0, 4, 16, 24, 40  # offsets in struct seccomp_data (low words)


def _one_of(nr: int, offset: int, values: Iterable[int]) -> list[bytes]:
    """Allow syscall ``nr`` when the argument at ``offset`` is one of ``values``, else EPERM."""
    values = list(values)
    body = [_bpf(LD_W_ABS, offset)]
    for value in values:
        body += [_bpf(JEQ, value, 0, 1), _bpf(RET, RET_ALLOW)]
    body += [_bpf(RET, RET_EPERM)]
    # Not this syscall: skip the body, which always returns, so the number is still loaded.
    return [_bpf(JEQ, nr, 0, len(body)), *body]


def _checked_rules(numbers: dict[str, int]) -> list[bytes]:
    prog: list[bytes] = []
    # clone3 hides its flags behind a pointer: say it does not exist, so libc uses clone.
    prog += [_bpf(JEQ, numbers["clone3"], 0, 1), _bpf(RET, RET_ENOSYS)]
    # clone: a thread (CLONE_THREAD) without a new namespace; never a new process.
    prog += [
        _bpf(JEQ, numbers["clone"], 0, 5),
        _bpf(LD_W_ABS, ARG0),
        _bpf(JSET, CLONE_NAMESPACES, 2, 0),
        _bpf(JSET, CLONE_THREAD, 0, 1),
        _bpf(RET, RET_ALLOW),
        _bpf(RET, RET_EPERM),
    ]
    prog += _one_of(numbers["ioctl"], ARG1, IOCTLS)
    prog += _one_of(numbers["prctl"], ARG0, PRCTLS)
    prog += _one_of(numbers["prlimit64"], ARG0, [0])  # its own limits only
    prog += _one_of(numbers["fcntl"], ARG1, FCNTLS)
    prog += [
        _bpf(JEQ, numbers["mmap"], 0, 4),
        _bpf(LD_W_ABS, ARG3),
        _bpf(JSET, MAP_SHARED, 1, 0),
        _bpf(RET, RET_ALLOW),
        _bpf(RET, RET_EPERM),
    ]
    if "arch_prctl" in numbers:  # x86_64: glibc sets the thread pointer of a new thread
        prog += _one_of(numbers["arch_prctl"], ARG0, [ARCH_SET_FS, ARCH_GET_FS])
    return prog


# Cached: the batch template builds both variants once, and every fork it makes inherits them.
@functools.lru_cache(maxsize=4)
def seccomp_program(machine: str, *, allow_signals: bool) -> bytes | None:
    """Return the allowlist as a BPF program for ``machine``, or None if it is not known."""
    arch = ARCHES.get(machine)
    if arch is None:
        return None
    audit, numbers = arch
    names = [name for _, group in ALLOWED for name in group.split()]
    if allow_signals:
        names += SIGNALLING.split()
    prog = [
        _bpf(LD_W_ABS, ARCH),
        # Another ABI (32-bit calls on a 64-bit kernel) has other numbers: kill outright.
        _bpf(JEQ, audit, 1, 0),
        _bpf(RET, RET_KILL_PROCESS),
        _bpf(LD_W_ABS, NR),
    ]
    # x32 calls (number | 0x40000000) share x86_64's audit value and match nothing here.
    for name in names:
        if name in numbers:
            prog += [_bpf(JEQ, numbers[name], 0, 1), _bpf(RET, RET_ALLOW)]
    prog += _checked_rules(numbers)
    prog.append(_bpf(RET, RET_EPERM))
    return b"".join(prog)


def apply_seccomp(*, allow_signals: bool) -> bool:
    """Load the allowlist: what is not listed fails with EPERM.

    Returns False on an architecture the allowlist does not know (nothing is applied).
    """
    filters = seccomp_program(platform.machine(), allow_signals=allow_signals)
    if filters is None:
        return False
    buf = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("<HxxxxxxQ", len(filters) // 8, ctypes.addressof(buf))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog))
    return True


def join_task_limit(fd: int) -> None:
    """Join the pids cgroup the parent made, through its cgroup.procs opened for us."""
    try:
        os.write(fd, b"0")  # "0" is the writer itself, whatever PID namespace it is in
    finally:
        os.close(fd)


def private_folder(*, tmp: str, submission: str, size: int, uid: int, gid: int) -> str:
    """Take new IPC, network and mount namespaces; put a ``size``-byte tmpfs on ``tmp``.

    Nothing the child creates in SysV IPC or the network outlives it, and everything it
    writes counts against one bound. Needs CAP_SYS_ADMIN (root, or bwrap's template with the
    capability in its user namespace); otherwise a user namespace of its own is tried.
    Returns which namespaces were taken: "ipc+net+mount" or "user+ipc+net+mount".
    """
    with open(submission, "rb") as handle:
        source = handle.read()
    # The submission's own other modules, which the parent wrote beside it: they are
    # hidden under the tmpfs too, and written back into it with the submission.
    files = {submission: source}
    for name in sorted(os.listdir(tmp)):
        path = os.path.join(tmp, name)
        if name.endswith(".py") and path != submission:
            with open(path, "rb") as handle:
                files[path] = handle.read()
    flags = CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWNS
    arch = _arch()
    if arch is None:
        raise OSError(ENOSYS, "unknown architecture")
    numbers = arch[1]
    taken = "ipc+net+mount"
    try:
        _syscall(numbers["unshare"], ctypes.c_int(flags))
    except PermissionError:
        real_uid, real_gid = os.getuid(), os.getgid()
        _syscall(numbers["unshare"], ctypes.c_int(flags | CLONE_NEWUSER))
        # Map our own ids, so files created in the tmpfs have an owner.
        with open("/proc/self/setgroups", "w") as handle:
            handle.write("deny")
        with open("/proc/self/uid_map", "w") as handle:
            handle.write(f"{real_uid} {real_uid} 1")
        with open("/proc/self/gid_map", "w") as handle:
            handle.write(f"{real_gid} {real_gid} 1")
        uid, gid, taken = real_uid, real_gid, "user+ipc+net+mount"
    # Private propagation first: a tmpfs mounted on a shared mount would appear outside too.
    _mount(numbers, None, "/", None, MS_REC | MS_PRIVATE, None)
    options = f"size={size},mode=0700,uid={uid},gid={gid}"
    _mount(numbers, "tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, data in files.items():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.chown(path, uid, gid)
    os.chdir(tmp)  # the old working directory is the folder now hidden under the tmpfs
    return taken


def _mount(
    numbers: dict[str, int],
    source: str | None,
    target: str,
    fstype: str | None,
    flags: int,
    data: str | None,
) -> None:
    def text(value: str | None) -> ctypes.c_char_p:
        return ctypes.c_char_p(None if value is None else value.encode())

    _syscall(
        numbers["mount"],
        text(source),
        text(target),
        text(fstype),
        ctypes.c_ulong(flags),
        text(data),
    )


def apply_limits(limits: dict[str, int]) -> None:
    """Set the resource limits the parent asked for, hard and soft."""
    cpu = limits["cpu_seconds"]
    # Soft limit first: SIGXCPU names the cause; the hard one a second later cannot be caught.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    if "tasks" in limits:
        # Counted per user (per user namespace under bwrap); root is exempt, see tasks_rule.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["tasks"],) * 2)
