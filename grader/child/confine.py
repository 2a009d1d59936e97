"""Confine the current process before it runs untrusted code: limits, Landlock, seccomp.

Stdlib only (ctypes for the three syscall families Python does not wrap), because this file
runs inside the sandbox, where the rest of the grader package is not even visible. Each
function is also importable by the parent, which uses ``landlock_abi`` to choose a backend.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import resource
import signal
import struct
from collections.abc import Iterable
from typing import Any, NoReturn

if __package__:  # imported by the parent, as part of the grader
    from grader.child import allowlist as sc
    from grader.child.bpf import seccomp_program
else:  # in the child, found beside this file (see run.py)
    import allowlist as sc  # type: ignore[import-not-found,no-redef]
    from bpf import seccomp_program  # type: ignore[import-not-found,no-redef]

__all__ = ["seccomp_program"]  # the template builds the filter once (zygote.py)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# Looked up here, in the template, rather than first in every fork.
_libc.prctl.restype = ctypes.c_int

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _syscall(number: int, *args: Any) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def _arch() -> tuple[int, dict[str, int]] | None:
    return sc.ARCHES.get(platform.machine())


def seccomp_supported() -> bool:
    """Return True where the seccomp allowlist knows this architecture's syscall numbers."""
    return _arch() is not None


def landlock_abi() -> int:
    """Return the kernel's Landlock ABI version, 0 where Landlock is missing or disabled."""
    try:
        return _syscall(
            sc.LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(sc.LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM, ABI 1
    if abi >= 2:
        rights |= 1 << 13  # REFER
    if abi >= 3:
        rights |= sc.FS_TRUNCATE
    if abi >= 5:
        rights |= sc.FS_IOCTL_DEV
    return rights


def apply_landlock(*, read: Iterable[str], write: Iterable[str]) -> int:
    """Allow reading ``read`` and everything under ``write``; deny every other path.

    Also deny TCP (ABI 4+) and signals or abstract sockets to processes outside (ABI 6+).
    Returns the ABI version used; raises OSError where Landlock cannot be applied.
    """
    abi = landlock_abi()
    if abi < 1:
        raise OSError(sc.ENOSYS, "Landlock is not available")
    handled = _fs_rights(abi)
    net = 3 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP
    scoped = sc.SCOPE_ABSTRACT_UNIX_SOCKET | sc.SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("<QQQ", handled, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = _syscall(
        sc.LANDLOCK_CREATE_RULESET,
        ctypes.c_char_p(attr[:size]),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),
    )
    file_rights = (
        sc.FS_EXECUTE | sc.FS_WRITE_FILE | sc.FS_READ_FILE | (sc.FS_TRUNCATE if abi >= 3 else 0)
    )
    try:
        for paths, rights in (
            (read, sc.FS_EXECUTE | sc.FS_READ_FILE | sc.FS_READ_DIR),
            (write, handled),
        ):
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
                        sc.LANDLOCK_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(sc.LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.c_char_p(rule),
                        ctypes.c_uint32(0),
                    )
                finally:
                    os.close(fd)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _syscall(sc.LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
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
        raise OSError(sc.ENOSYS, "cannot drop capabilities on this architecture")
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
    """Put this process, and every process it starts from now on, in a PID namespace that
    dies with it.

    With no sandbox nothing refuses fork and setsid, and a process in a session of its own
    escapes both the process group kill and this process's death signal: killed with the
    grader (SIGKILL included), it lived on until a later grader's start. The first fork
    after unshare is the namespace's init: it only waits, with this process as its parent
    and SIGKILL as its death signal, and when it dies the kernel kills everything else in
    the namespace. A process cannot enter the namespace it made, and Linux refuses it new
    threads while its children's namespace is another (EINVAL): so the second fork, inside,
    goes on to import and answer, and this process only relays (see _relay). Needs
    CAP_SYS_ADMIN (the grader run as root); returns False where it is refused, and the pids
    cgroup stays the only net.
    """
    arch = _arch()
    if arch is None:
        return False
    try:
        _syscall(arch[1]["unshare"], ctypes.c_int(CLONE_NEWPID))
    except OSError:
        return False
    init = _start_init()
    if init is None:
        return False
    inside = os.fork()
    if inside == 0:
        # Its parent lies outside the namespace, where getppid() names it 0; had it died
        # already, the namespace's init would be this process's parent.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != 0:
            os._exit(0)
        # A process group of its own, whose id the relay's group cannot be named by from
        # inside: nothing the submission starts can stop or signal the relay through its
        # group (the grader's kill of the relay's group still ends it all: death signals).
        os.setpgid(0, 0)
        return True
    _relay(inside, init)


def _start_init() -> int | None:
    """Fork the namespace's init, and return its pid once it is ready (None: it is not)."""
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
            # As init, it is the parent of every orphan in the namespace: it reaps them, or
            # their zombies would hold the task limit. SIGCHLD is blocked and waited for, so
            # none arrives between a reap and the wait.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            os.write(ready_w, b"1")
            os.closerange(0, os.sysconf("SC_OPEN_MAX"))
            while True:
                _reap()
                signal.sigwaitinfo({signal.SIGCHLD})
        finally:
            os._exit(0)
    os.close(alive_r)
    os.close(ready_w)
    try:
        ready = os.read(ready_r, 1) == b"1"
    finally:
        os.close(ready_r)
        os.close(alive_w)
    return pid if ready else None


def _reap() -> None:
    """Wait for every child that has ended, without blocking."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _relay(inside: int, init: int) -> NoReturn:
    """Wait for the process that answers inside the namespace, then end the namespace and
    this process as it ended: its exit status, or its signal (the parent reads a CPU or a
    file limit, or a crash, by the signal). This process holds no descriptor meanwhile, so
    the parent sees the pipes close when the answering process's copies do; a kill of this
    process or of its group ends the namespace all the same (the init's death signal)."""
    os.closerange(0, os.sysconf("SC_OPEN_MAX"))
    try:
        _, status = os.waitpid(inside, 0)
    except ChildProcessError:
        status = 1 << 8
    os.kill(init, signal.SIGKILL)  # and with it whatever the submission left in there
    with contextlib.suppress(ChildProcessError):
        os.waitpid(init, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set: it kills
            signal.signal(number, signal.SIG_DFL)
        with contextlib.suppress(OSError, ValueError):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
            os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def apply_seccomp(*, allow_signals: bool) -> bool:
    """Load the allowlist: what is not listed fails with sc.EPERM.

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


def _held_files(tmp: str, submission: str) -> dict[str, bytes | None]:
    """Return the submission and its own other modules and packages (None for a folder),
    which the parent wrote beside it: hidden under the tmpfs too, and written back into it,
    each folder before what it holds."""
    with open(submission, "rb") as handle:
        files: dict[str, bytes | None] = {submission: handle.read()}
    for here, folders, names in os.walk(tmp):
        folders.sort()
        files.update((os.path.join(here, name), None) for name in folders)
        for name in sorted(names):
            path = os.path.join(here, name)
            if name.endswith(".py") and path != submission:
                with open(path, "rb") as handle:
                    files[path] = handle.read()
    return files


def private_folder(
    *, tmp: str, submission: str, size: int, uid: int, gid: int, user: bool = False
) -> str:
    """Take new IPC, network and mount namespaces; put a ``size``-byte tmpfs on ``tmp``.

    Nothing the child creates in SysV IPC or the network outlives it, and everything it
    writes counts against one bound. Needs CAP_SYS_ADMIN (root, or bwrap's template with the
    capability in its user namespace); ``user``, where the parent found none (a container's
    root too): a user namespace first, whose capabilities the caller then drops.
    Returns which namespaces were taken: "ipc+net+mount" or "user+ipc+net+mount".
    """
    files = _held_files(tmp, submission)
    flags = sc.CLONE_NEWIPC | sc.CLONE_NEWNET | sc.CLONE_NEWNS
    arch = _arch()
    if arch is None:
        raise OSError(sc.ENOSYS, "unknown architecture")
    numbers = arch[1]
    if user:
        _user_namespace(numbers, flags, uid, gid)
    else:
        _syscall(numbers["unshare"], ctypes.c_int(flags))
    # Private propagation first: a tmpfs mounted on a shared mount would appear outside too.
    _mount(numbers, None, "/", None, sc.MS_REC | sc.MS_PRIVATE, None)
    options = f"size={size},mode=0700,uid={uid},gid={gid}"
    _mount(numbers, "tmpfs", tmp, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, options)
    for path, data in files.items():
        if data is None:
            os.mkdir(path, 0o700)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        os.chown(path, uid, gid)
    os.chdir(tmp)  # the old working directory is the folder now hidden under the tmpfs
    return "user+ipc+net+mount" if user else "ipc+net+mount"


def _user_namespace(numbers: dict[str, int], flags: int, uid: int, gid: int) -> None:
    """Take a user namespace holding those of ``flags``, as ``uid`` (root becomes it first),
    its own ids mapped to themselves: files made in the tmpfs then have an owner."""
    left_root = os.geteuid() != uid
    if left_root:
        become_user(uid)
        # Leaving root made this process undumpable, its /proc/self root's: for a moment
        # it is dumpable again, to write its own maps there, and never after.
        _prctl(PR_SET_DUMPABLE, 1)
    try:
        _syscall(numbers["unshare"], ctypes.c_int(flags | sc.CLONE_NEWUSER))
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    finally:
        if left_root:
            _prctl(PR_SET_DUMPABLE, 0)


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
