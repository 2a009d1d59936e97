"""The walls around a child: which backend, what the child may read, how it starts.

Backends: bubblewrap (namespaces and a read-only view), Landlock with seccomp (the child
restricts itself), or none. Kept free of numpy, so that the parent can start a child before
it imports anything heavy.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.files import PACKAGE

CHILD_DIR = PACKAGE / "child"
# The unprivileged identity inside bubblewrap's user namespace ("nobody").
SANDBOX_UID = 65534
# Environment variables the child keeps: some machines set the OpenBLAS core type because
# older builds crash without it.
PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def python_command() -> list[str]:
    """Return how a child interpreter starts: isolated, no bytecode files, no site."""
    return [sys.executable, "-I", "-S", "-B"]


@functools.cache
def import_paths() -> list[str]:
    """Return the folders a child started without site imports from: site-packages, numpy's."""
    paths = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    # find_spec, not import: the parent must not pay for numpy before its child is started.
    spec = importlib.util.find_spec("numpy")
    if spec is not None and spec.origin is not None:
        paths.append(str(Path(spec.origin).resolve().parent.parent))
    return list(dict.fromkeys(p for p in paths if os.path.isdir(p)))


@functools.cache
def read_paths() -> list[str]:
    """Return what the child may read: the interpreter, its libraries, numpy, the child code.

    Nothing else: not the problem folder, the reference, or the rest of the grader.
    """
    paths = {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache", str(CHILD_DIR)}
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        found = sysconfig.get_paths(vars=base)
        paths.update(found[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        paths.add(str(sysconfig.get_config_var("LIBDIR")))
    paths.update({sys.executable, os.path.realpath(sys.executable)})
    paths.add(os.path.join(sys.prefix, "pyvenv.cfg"))
    paths.update(import_paths())  # where numpy is, wherever it was installed
    return sorted(p for p in paths if os.path.lexists(p))


@functools.cache
def privilege_plan(backend: str) -> str:
    """Return how a Landlock child started by root leaves root: "uid", "capabilities" or ""."""
    if backend != "landlock" or os.geteuid() != 0:
        return ""
    # An unprivileged uid is stronger, but only works where it can still import the stdlib.
    from grader.child import confine  # ctypes: loaded only where Landlock is in play

    return "uid" if all(confine.world_reachable(p) for p in read_paths()) else "capabilities"


def check_hidden_unreachable(protected: Sequence[Path]) -> None:
    """Refuse to grade if any protected file could be read by a child; name the first."""
    found = exposed_files(protected)
    if found:
        more = f" (and {len(found) - 1} more; `grader check` lists them)" if len(found) > 1 else ""
        raise GraderError(f"{found[0]}{more}")


def check_private(path: Path, what: str) -> None:
    """Refuse a folder the grader writes staff-only material to (a batch's --out) if a
    child could read it: the next submission graded would find the class's results there."""
    found = _exposed_place(path, _reachable())
    if found:
        raise GraderError(f"{what} {found[0]}")


class Exposure(NamedTuple):
    """A protected folder or file that a child could read, and why."""

    path: Path
    why: str

    def __str__(self) -> str:
        return f"{self.path} {self.why}"


def exposed_files(protected: Sequence[Path]) -> list[Exposure]:
    """Return why each protected folder or file could be read by a child; [] if none could.

    A folder is judged where it really is: a linked hidden_tests/ that resolves outside
    what the child reads is fine. A file must be a plain file of its own: a symbolic link or
    a second hard link is another name, perhaps inside site-packages, which a path check on
    this side never sees; and its real place, compared by path and by the identity (device
    and inode) of every folder above it, must not lie inside what the child reads, so that
    a bind mount or a linked parent is seen too.
    """
    reach = _reachable()
    found: list[Exposure] = []
    for place in protected:
        if not place.is_dir():  # a module the reference imports; a linked folder is a folder
            found += _exposed_file(place, reach)
            continue
        folders, files = _walk(place)
        # Every folder too, __pycache__ included: the grader's own import of the reference
        # writes its bytecode there, and a linked one would carry it where children read.
        for folder in folders:
            found += _exposed_place(folder, reach)
        for path in files:
            found += _exposed_file(path, reach)
    return found


class _Reach(NamedTuple):
    """What the child may read: as resolved paths, as folders' (device, inode), and the
    roots of the mounts inside them, by (device, inode), each with where it is mounted."""

    paths: tuple[str, ...]
    folders: frozenset[tuple[int, int]]
    mounted: dict[tuple[int, int], str]


def _reachable() -> _Reach:
    paths = tuple(os.path.realpath(p) for p in read_paths())
    folders = set()
    for p in paths:
        try:
            info = os.stat(p)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            folders.add((info.st_dev, info.st_ino))
    return _Reach(paths, frozenset(folders), _mounts_inside(paths))


def _mounts_inside(paths: Sequence[str]) -> dict[tuple[int, int], str]:
    """Return the root of every mount whose mount point lies inside ``paths``.

    A bind mount puts a folder (or one file) from anywhere at a place inside what the child
    reads; bwrap's binds carry such mounts along, and Landlock allows by place. The mount's
    root, seen through its mount point, has the identity of the folder or file it shows.
    """
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    mounted: dict[tuple[int, int], str] = {}
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        # Spaces and other odd characters are written as octal escapes (\040).
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
        if not any(point == p or point.startswith(p.rstrip("/") + "/") for p in paths):
            continue
        try:
            info = os.stat(point)
        except OSError:
            continue
        mounted[(info.st_dev, info.st_ino)] = point
    return mounted


def _walk(folder: Path) -> tuple[list[Path], list[Path]]:
    """Return every folder and every file below ``folder``, following linked folders once."""
    folders: list[Path] = []
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for top, dirs, names in os.walk(folder, followlinks=True):
        info = os.stat(top)
        if (info.st_dev, info.st_ino) in seen:  # a link back up: walk no folder twice
            dirs.clear()
            continue
        seen.add((info.st_dev, info.st_ino))
        folders.append(Path(top))
        files += [Path(top, name) for name in names]
    return folders, files


def _exposed_place(path: Path, reach: _Reach) -> list[Exposure]:
    """Return why the real place of ``path`` lies inside what the child reads, if it does."""
    real = os.path.realpath(path)
    for allowed in reach.paths:
        if real == allowed or real.startswith(allowed.rstrip("/") + "/"):
            return [
                Exposure(
                    path,
                    f"is inside {allowed}, which the sandbox lets submissions read; "
                    "keep the problem folder outside the Python installation",
                )
            ]
    above = Path(real)
    for parent in (above, *above.parents):
        try:
            info = os.stat(parent)
        except OSError:
            continue
        identity = (info.st_dev, info.st_ino)
        if identity in reach.folders:
            return [
                Exposure(
                    path,
                    f"is inside {parent}, a folder the sandbox lets submissions read under "
                    "another name (a bind mount or a link)",
                )
            ]
        if identity in reach.mounted:
            return [
                Exposure(
                    path,
                    f"is mounted at {reach.mounted[identity]}, inside what the sandbox lets "
                    "submissions read",
                )
            ]
    return []


def _exposed_file(path: Path, reach: _Reach) -> list[Exposure]:
    """Return why one protected file could be read by a child, if it could."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return [Exposure(path, f"cannot be examined: {exc.strerror}")]
    if stat.S_ISLNK(info.st_mode):
        return [
            Exposure(
                path,
                f"is a symbolic link (to {os.readlink(path)}); the hidden cases and the "
                "solutions must be plain files, which submissions cannot reach by another name",
            )
        ]
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return [
            Exposure(
                path,
                f"has {info.st_nlink} hard links; another name for it may lie where "
                "submissions read: copy it so that it has one",
            )
        ]
    return _exposed_place(path, reach)


def bwrap_command(
    tmp: str,
    *,
    submission: str | None = None,
    write_bytes: int = 0,
    capabilities: Sequence[str] = (),
    modules: Sequence[str] = (),
) -> list[str]:
    """Return the bubblewrap prefix: a read-only view of read_paths() and a private tmp.

    With ``write_bytes``, ``tmp`` is a tmpfs of that size holding a read-only ``submission``
    and the submission's own other ``modules``; otherwise the host folder itself.
    ``capabilities`` are kept inside the user namespace (the batch template needs
    CAP_SYS_ADMIN to give each fork its own namespaces).
    """
    cmd = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--cap-drop",
        "ALL",
    ]
    for cap in capabilities:
        cmd += ["--cap-add", cap]
    # Parents before children, so that a nested bind is not hidden by its parent's.
    for path in sorted(read_paths(), key=lambda p: (p.count("/"), p)):
        if os.path.islink(path) and path.count("/") == 1:
            cmd += ["--symlink", os.readlink(path), path]
        else:
            cmd += ["--ro-bind", path, path]
    if write_bytes and submission is not None:
        cmd += ["--size", str(write_bytes), "--tmpfs", tmp, "--ro-bind", submission, submission]
        for module in modules:
            cmd += ["--ro-bind", module, module]
    else:
        cmd += ["--bind", tmp, tmp]
    # A read-only /dev: its device nodes still work, but /dev/shm takes no files. And a
    # read-only root: bwrap builds it as a tmpfs of no set size, where the folders it made
    # for the mounts above (/tmp, say) would otherwise take files past the write limit.
    # A read-only /proc too: /proc/self/comm and oom_score_adj are readable by anyone on
    # the machine, so writing them would be a channel out.
    cmd += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/"]
    cmd += ["--remount-ro", "/proc"]
    cmd += ["--chdir", tmp, "--"]
    return cmd


@functools.cache
def bwrap_usable() -> bool:
    """Return True when bubblewrap is installed and can start a sandboxed interpreter here."""
    if shutil.which("bwrap") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
        try:
            proc = subprocess.run(
                [*bwrap_command(tmp), sys.executable, "-I", "-c", "pass"],
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return proc.returncode == 0


def landlock_usable() -> bool:
    """Return True when the kernel has Landlock and seccomp knows this architecture."""
    from grader.child import confine  # ctypes: loaded only where Landlock is in play

    return confine.landlock_abi() >= 1 and confine.seccomp_supported()


class Choice(NamedTuple):
    """The backend to start with, and what to fall back to if bubblewrap cannot start."""

    backend: str
    fallback: str | None = None


def resolve_backend(requested: str, *, require: bool) -> Choice:
    """Turn auto|bwrap|landlock|none into the backend that will run, or say why not.

    In auto mode bubblewrap is tried for real by the first child rather than probed
    beforehand, which would cost a whole extra interpreter start on every grading; what to
    fall back to is settled only if it fails.
    """
    if requested == "none" and require:
        raise GraderError("--sandbox none contradicts --require-sandbox")
    if requested == "bwrap" and shutil.which("bwrap") is None:
        raise GraderError("--sandbox bwrap: bubblewrap (bwrap) is not installed")
    if requested == "landlock" and not landlock_usable():
        from grader.child import confine

        if not confine.seccomp_supported():
            raise GraderError(
                f"--sandbox landlock: the seccomp allowlist has no table for {os.uname().machine}"
            )
        raise GraderError("--sandbox landlock: this kernel has no usable Landlock")
    if requested != "auto":
        return Choice(requested)
    if shutil.which("bwrap") is not None:
        return Choice("bwrap", fallback=FALLBACK_REQUIRED if require else FALLBACK_ANY)
    return Choice(second_choice(require))


FALLBACK_ANY, FALLBACK_REQUIRED = "landlock, else none", "landlock, else stop"


def second_choice(require: bool) -> str:
    """Return the backend to use without bubblewrap: Landlock, else none unless required."""
    if landlock_usable():
        return "landlock"
    if require:
        raise GraderError(
            "no sandbox is available (install bubblewrap, or use a kernel with Landlock) "
            "and --require-sandbox was given"
        )
    return "none"


def child_env(tmp: str) -> dict[str, str]:
    """Return the small, fixed environment of a child."""
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": tmp,
        "TMPDIR": tmp,
        # numpy's BLAS would otherwise start a thread per core and reserve memory for each.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        # Each case's tables come and go; glibc would hand the top of the heap back to the
        # system after each and fault it in again for the next. 16 MB of headroom (address
        # space, not memory, until used) cut a child's page faults by a quarter.
        "MALLOC_TOP_PAD_": str(16 << 20),
    }
    env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ})
    return env
