"""The data of the child's walls: the seccomp allowlist by purpose, each architecture's
system call numbers, and the flags and values the checked calls may carry.

Stdlib only, like confine.py, which reads it: both run inside the sandbox.
"""

from __future__ import annotations

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
        "threads: Python and numpy threads and what they wait on (clone and futex are checked "
        "below)",
        "get_robust_list rseq set_tid_address gettid sched_yield "
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
CHECKED = (
    "futex",
    "set_robust_list",
    "clone",
    "clone3",
    "ioctl",
    "prctl",
    "arch_prctl",
    "prlimit64",
    "fcntl",
    "mmap",
)
# futex: a process's own waits and wakes only (FUTEX_PRIVATE_FLAG, which glibc's and Python's
# locks set). Without it, a futex on a page of a file the process maps (a library, numpy's
# modules, any file it reads) is keyed by the file, and every process on the machine that maps
# the same file shares it: a wake there is a channel out, and to a neighbour (an attack round
# carried a hidden input that way into another learner's import error). Such a call does
# nothing and returns 0: a wait then returns at once, as if woken (glibc's join of a thread
# waits so on its id, and spins instead), a wake wakes no one.
FUTEX_PRIVATE_FLAG = 128
# set_robust_list does nothing and returns 0: at a thread's exit the kernel would wake, keyed
# by the file, a futex the list names on such a page, the same channel. Robust mutexes are
# for locks shared between processes, which a child has none of. Not closed: the kernel's own
# wake of a thread's id word when it ends (set_tid_address, clone's CLONE_CHILD_CLEARTID, which
# glibc needs), which a filter cannot see; SECURITY.md's What is not covered says so.

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
