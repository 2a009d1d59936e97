"""macOS and Windows, emulated on Linux: a `sitecustomize` that takes away, before anything
else is imported, what the system lacks. Written into a venv's site-packages, it runs in
the grader's process and in every child it starts with site (`python -I` keeps site; the
walled children's `-S` skips it, and under these emulations no wall can start anyway).

What each emulation takes away (and so what is tested) is what the grader must never need
off Linux; what Linux CI cannot emulate (Windows' handles and pipes, a real macOS libc) is
said in README.md.
"""

from __future__ import annotations

from pathlib import Path

# Both systems: no bubblewrap to find, no /proc and no cgroup files.
_COMMON = '''
import builtins, ctypes, io, os, shutil, signal, sys

_which = shutil.which


def _no_bwrap(cmd, *args, **kwargs):
    if os.path.basename(str(cmd)) == "bwrap":
        return None
    return _which(cmd, *args, **kwargs)


shutil.which = _no_bwrap

_LINUX_FILES = ("/proc", "/sys/fs/cgroup")


def _linux_only(path):
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    return any(text == p or text.startswith(p + "/") for p in _LINUX_FILES)


def _hide(call):
    def hidden(*args, **kwargs):
        if args and _linux_only(args[0]):
            raise FileNotFoundError(2, "No such file or directory (emulated)", str(args[0]))
        return call(*args, **kwargs)

    return hidden


builtins.open = io.open = _hide(io.open)
for _name in ("open", "stat", "lstat", "listdir", "scandir", "mkdir"):
    setattr(os, _name, _hide(getattr(os, _name)))
os.path.exists = lambda p, _exists=os.path.exists: not _linux_only(p) and _exists(p)


class _Libc(ctypes.CDLL):
    """A C library without Linux's own calls."""

    def __getattr__(self, name):
        if name in _NO_LIBC:
            raise AttributeError(f"emulated {_SYSTEM} libc has no {name}")
        return super().__getattr__(name)

    def __getitem__(self, name):
        if name in _NO_LIBC:
            raise AttributeError(f"emulated {_SYSTEM} libc has no {name}")
        return super().__getitem__(name)


ctypes.CDLL = _Libc
'''

_DARWIN = """
_SYSTEM = "macOS"
_NO_LIBC = {"prctl", "unshare", "mount", "setns", "syscall"}
import fcntl

for _name in ("F_SETPIPE_SZ", "F_GETPIPE_SZ"):
    if hasattr(fcntl, _name):
        delattr(fcntl, _name)
for _name in (
    "pipe2", "pidfd_open", "memfd_create", "sched_getaffinity", "getresuid", "setresuid",
    "getresgid", "setresgid",
):
    if hasattr(os, _name):
        delattr(os, _name)
# Read before the platform changes: its data module is named for the real one.
import sysconfig

sysconfig.get_config_vars()
sys.platform = "darwin"
"""

_WIN32 = """
_SYSTEM = "Windows"
_NO_LIBC = {"prctl", "unshare", "mount", "setns", "syscall"}
for _name in ("fcntl", "resource", "termios", "pwd", "grp"):
    sys.modules[_name] = None  # import raises ImportError, as on Windows
for _name in (
    "fork", "forkpty", "killpg", "setsid", "getuid", "geteuid", "getgid", "getegid",
    "pipe2", "pidfd_open", "memfd_create", "sched_getaffinity", "readv", "writev", "pread",
    "pwrite", "pwritev",
    "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_DIRECTORY",
):
    if hasattr(os, _name):
        delattr(os, _name)
for _name in ("SIGHUP", "SIGKILL", "SIGALRM", "SIGXCPU", "SIGXFSZ"):
    if hasattr(signal, _name):
        delattr(signal, _name)
"""

SYSTEMS = {"darwin": _COMMON + _DARWIN, "win32": _COMMON + _WIN32}


def install(site_packages: Path, system: str) -> None:
    """Make every interpreter of the venv whose ``site_packages`` is given start as ``system``."""
    (site_packages / "sitecustomize.py").write_text(SYSTEMS[system], encoding="utf-8")
