"""What this machine allows of the walls, where it is a container that refuses some.

A container run with its runtime's defaults (Podman's or Docker's capabilities and seccomp
profile, a Kubernetes pod with `seccompProfile: RuntimeDefault`) refuses some of what the
walls are built of: bubblewrap's own /proc (the container's /proc has masked parts, so the
kernel refuses a fresh one), or namespaces taken without a user namespace (no
CAP_SYS_ADMIN). Each refused wall is replaced here by the strongest one allowed: bubblewrap
without a /proc of its own, a user namespace first and the other namespaces inside it. The
parent decides; the child is told each wall as a yes or a no.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys

# What a container must allow for any wall that keeps the hidden cases out of a child's
# reach: one line, named in every refusal.
WHAT_TO_ALLOW = (
    "allow user namespaces (bubblewrap), or the landlock_* system calls on a kernel with "
    "Landlock (Landlock with seccomp); never --privileged: see docs/sandbox.md"
)
CAP_SYS_ADMIN = 21
CHANGE_UID = (0, 6, 7)  # CAP_CHOWN, CAP_SETGID, CAP_SETUID


class View:
    """What bubblewrap's view of the machine holds here: its own /proc, or none.

    Set once, when bubblewrap failed and was found to start without a /proc of its own.
    """

    own_proc = True


def use_own_proc(own: bool) -> None:
    """Build every bubblewrap command from now on with a /proc of its own, or with none."""
    View.own_proc = own


def bwrap_refusal(prefix: list[str], *, site: bool = False) -> str:
    """Return why bubblewrap, as ``prefix`` builds it, cannot start an interpreter here
    (importing its site packages too, with ``site``): its first line of errors, or "" where
    it starts."""
    if shutil.which(prefix[0]) is None:
        return f"{prefix[0]} is not installed"
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-I", *([] if site else ["-S"]), "-c", "pass"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return ""
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else f"exit status {proc.returncode}"


EPERM, EBADF = 1, 9
LSM = "landlock"  # as the kernel lists its security modules
# Each landlock_* call after the first, with arguments no kernel accepts (no ruleset): a
# call that reaches the kernel fails with EBADF and restricts nothing, or for
# restrict_self EPERM (the kernel's answer first to a process without no_new_privs).
LANDLOCK_PROBES = (
    ("landlock_add_rule", 445, 4, (EBADF,)),
    ("landlock_restrict_self", 446, 2, (EBADF, EPERM)),
)


@functools.cache
def landlock_refused() -> str:
    """Return the first landlock_* system call a seccomp filter refuses here (a container's
    profile may let the first through and not the rest), or "" where they reach the kernel."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for name, number, count, kernel in LANDLOCK_PROBES:
        args = (ctypes.c_int(-1), ctypes.c_int(1), ctypes.c_void_p(None), ctypes.c_uint32(0))
        ctypes.set_errno(0)
        libc.syscall(ctypes.c_long(number), *args[:count])
        if ctypes.get_errno() not in kernel:
            return name
    return ""


def landlock_missing() -> str:
    """Return why Landlock cannot start here, as a refusal names it: a container's seccomp
    profile refusing its calls, or a kernel without it."""
    refused = landlock_refused()
    if refused:
        return f"this container's seccomp profile refuses Landlock's calls ({refused})"
    try:
        with open("/sys/kernel/security/lsm", encoding="ascii") as lsm:
            kernel_has_it = LSM in lsm.read().split(",")
    except OSError:
        kernel_has_it = False
    if kernel_has_it:
        return "this container's seccomp profile refuses Landlock's calls"
    return "this kernel has no usable Landlock, or this container's profile refuses it"


@functools.cache
def capabilities() -> int:
    """Return this process's effective capabilities as a mask; none where unreadable."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def namespaces_need_user() -> bool:
    """Return True where new IPC, network and mount namespaces need a user namespace first:
    this process lacks CAP_SYS_ADMIN (not root, or root in a container's defaults)."""
    return not capabilities() >> CAP_SYS_ADMIN & 1


def can_change_uid() -> bool:
    """Return True where this process may hand its files to another uid and become it:
    CAP_CHOWN, CAP_SETGID and CAP_SETUID (root with `--cap-drop ALL` has none of them)."""
    return all(capabilities() >> cap & 1 for cap in CHANGE_UID)


def bwrap_namespaces() -> str:
    """Return how the namespaces of a child alone in bubblewrap are named in its walls."""
    return "all of bwrap's" if View.own_proc else "all of bwrap's, with no /proc"


def describe_bwrap() -> str:
    """Return the name of bubblewrap's walls as a batch's settings record them."""
    return "bwrap" if View.own_proc else "bwrap (no /proc)"
