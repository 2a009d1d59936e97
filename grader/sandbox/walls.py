"""The walls around a child: which backend, what the child may read, how it starts.

Backends: bubblewrap (namespaces and a read-only view), Landlock with seccomp (the child
restricts itself), or none. Kept free of numpy, so that the parent can start a child before
it imports anything heavy.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.files import PACKAGE
from grader.sandbox import allowed
from grader.states import AUTO, Backend, Word

CHILD_DIR = PACKAGE / "child"
BWRAP_PROGRAM = "bwrap"  # bubblewrap's command
# The unprivileged identity inside bubblewrap's user namespace ("nobody").
SANDBOX_UID = 65534
# Environment variables the child keeps: some machines set the OpenBLAS core type because
# older builds crash without it.
PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class Fallback(Word):
    """What `--sandbox auto` uses when bubblewrap is installed but cannot start."""

    ANY = "landlock, else none"
    REQUIRED = "landlock, else stop"  # --require-sandbox
    WALLED = "landlock, else refuse"  # a learner's submission beside hidden cases


class Unwalled(Word):
    """What `--sandbox auto` does where no wall can start (macOS, Windows, a Linux without
    bubblewrap or Landlock)."""

    # A learner's submission beside hidden cases: never without walls, unless
    # `--sandbox none` says so (exit 2).
    REFUSE = "refuse"
    # A learner kit (it holds no secret), or an author's own files: run without walls,
    # and say so.
    ALLOW = "allow"


NO_WALLS = (
    "no sandbox can start here (bubblewrap, or Landlock with seccomp, on Linux; in a "
    f"container, {allowed.WHAT_TO_ALLOW}), and a submission beside hidden cases never runs "
    "without one; give --sandbox none to run it "
    "anyway, as a plain process that could read the hidden cases"
)


class Privilege(Word):
    """How a Landlock child started by root leaves root."""

    KEEP = ""  # not root, or not Landlock: nothing to leave
    UID = "uid"  # become an unprivileged uid (stronger; needs a world-readable interpreter)
    CAPABILITIES = "capabilities"  # stay uid 0 with every capability dropped


def python_command() -> list[str]:
    """Return how a child interpreter starts: isolated, no bytecode files, no site."""
    return [sys.executable, "-I", "-S", "-B"]


def unwalled_command() -> list[str]:
    """Return how a child starts where it cannot confine itself (macOS, Windows): isolated,
    its pipes in UTF-8 whatever the system's code page (a Windows pipe is cp1252), with
    site, which a Windows or conda numpy may need to find its libraries."""
    return [sys.executable, "-I", "-X", "utf8", "-B"]


@functools.cache
def confinable() -> bool:
    """Return True where a child can confine itself (limits, namespaces, Landlock): where
    the child's confine module loads, which needs Linux's C library and `resource`."""
    try:
        from grader.child import confine  # noqa: F401 - loading it is the probe
    except (ImportError, OSError, AttributeError, TypeError):
        # No resource module (Windows), no C library by that name, no prctl (macOS).
        return False
    return True


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
def privilege_plan(backend: Backend) -> Privilege:
    """Return how a Landlock child started by root leaves root."""
    if backend is not Backend.LANDLOCK or os.geteuid() != 0:
        return Privilege.KEEP
    # An unprivileged uid is stronger, but only works where it can still import the stdlib.
    from grader.child import confine  # ctypes: loaded only where Landlock is in play

    # Where root may not hand its files to another uid (a container's root with every
    # capability dropped), it stays uid 0 with none: Landlock and seccomp (no chmod, chown
    # or open beyond its paths) keep the hidden cases out of reach whoever owns them.
    if allowed.can_change_uid() and all(confine.world_reachable(p) for p in read_paths()):
        return Privilege.UID
    return Privilege.CAPABILITIES


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
        shutil.which(BWRAP_PROGRAM) or BWRAP_PROGRAM,
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
    # the machine, so writing them would be a channel out. Where a container refuses
    # bubblewrap a /proc of its own, none at all (see allowed.py).
    if allowed.View.own_proc:
        cmd += ["--proc", "/proc"]
    cmd += ["--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/"]
    if allowed.View.own_proc:
        cmd += ["--remount-ro", "/proc"]
    cmd += ["--chdir", tmp, "--"]
    return cmd


@functools.cache
def bwrap_usable() -> bool:
    """Return True when bubblewrap is installed and can start a sandboxed interpreter here."""
    if shutil.which(BWRAP_PROGRAM) is None:
        return False
    return not bwrap_refusal_here(site=True)


def bwrap_refusal_here(*, site: bool = False) -> str:
    """Return why bubblewrap, as a child's is built now, cannot start an interpreter here
    ("" where it starts): tried in an empty folder of its own, as a child's folder is. Never
    the whole temporary folder: bound over the read-only paths, it hid the interpreter of a
    grader installed under it (a clone in `mktemp -d`), whose folders the sandbox's user
    may not enter."""
    with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
        return allowed.bwrap_refusal(bwrap_command(tmp), site=site)


def landlock_usable() -> bool:
    """Return True when the kernel has Landlock and seccomp knows this architecture."""
    if not confinable():
        return False
    from grader.child import confine  # ctypes: loaded only where Landlock is in play

    if confine.landlock_abi() < 1 or not confine.seccomp_supported():
        return False
    return not allowed.landlock_refused()


class Choice(NamedTuple):
    """The backend to start with, and what to fall back to if bubblewrap cannot start."""

    backend: Backend
    fallback: Fallback | None = None


def resolve_backend(
    requested: str, *, require: bool, unwalled: Unwalled = Unwalled.REFUSE
) -> Choice:
    """Turn auto|bwrap|landlock|none into the backend that will run, or say why not.

    In auto mode bubblewrap is tried for real by the first child rather than probed
    beforehand, which would cost a whole extra interpreter start on every grading; what to
    fall back to is settled only if it fails. Where no wall can start, ``unwalled`` says
    whether auto may run without one.
    """
    if requested != AUTO:
        return Choice(_usable(Backend(requested), require=require))
    if shutil.which(BWRAP_PROGRAM) is not None:
        fallback = Fallback.REQUIRED if require else Fallback.ANY
        if fallback is Fallback.ANY and unwalled is Unwalled.REFUSE:
            fallback = Fallback.WALLED
        return Choice(Backend.BWRAP, fallback=fallback)
    return Choice(second_choice(require, unwalled))


def _usable(backend: Backend, *, require: bool) -> Backend:
    """Return ``backend``, asked for by name, once it is known to work here."""
    if backend is Backend.NONE and require:
        raise GraderError("--sandbox none contradicts --require-sandbox")
    if backend is Backend.BWRAP and shutil.which(BWRAP_PROGRAM) is None:
        raise GraderError("--sandbox bwrap: bubblewrap (bwrap) is not installed")
    if backend is Backend.LANDLOCK and not confinable():
        raise GraderError("--sandbox landlock: Landlock is Linux's, and this system has none")
    if backend is Backend.LANDLOCK and not landlock_usable():
        from grader.child import confine

        if not confine.seccomp_supported():
            raise GraderError(
                f"--sandbox landlock: the seccomp allowlist has no table for {os.uname().machine}"
            )
        raise GraderError(
            f"--sandbox landlock: {allowed.landlock_missing()}; {allowed.WHAT_TO_ALLOW}"
        )
    return backend


def second_choice(require: bool, unwalled: Unwalled = Unwalled.ALLOW) -> Backend:
    """Return the backend to use without bubblewrap: Landlock, else none unless required
    or refused."""
    if landlock_usable():
        return Backend.LANDLOCK
    if require:
        raise GraderError(
            "no sandbox is available (install bubblewrap, or use a kernel with Landlock; "
            f"in a container, {allowed.WHAT_TO_ALLOW}) and --require-sandbox was given"
        )
    if unwalled is Unwalled.REFUSE:
        raise GraderError(NO_WALLS)
    return Backend.NONE


def fall_back(fallback: Fallback | None, why: str, *, failed: str) -> tuple[Backend, str]:
    """Return the backend to use now that bubblewrap could not start, and the note saying
    so; where the choice allows no fallback, stop with ``failed`` and bubblewrap's words.

    The one policy for a single child (a Session) and for a batch's template (a Pool).
    Where bubblewrap starts without a /proc of its own (a container's defaults refuse a
    fresh one), it stays, with every namespace, and no /proc.
    """
    if allowed.View.own_proc:
        allowed.use_own_proc(False)
        again = bwrap_refusal_here()
        if not again:
            return Backend.BWRAP, f"bubblewrap could not start here ({why}); used it with no /proc"
        allowed.use_own_proc(True)
        if again != why:  # /proc was not all: what it says without one names the rest
            why = f"{why}; with no /proc: {again}"
    if fallback is None:
        raise GraderError(f"{failed} could not start: {why}")
    second = second_choice(
        require=fallback is Fallback.REQUIRED,
        unwalled=Unwalled.REFUSE if fallback is Fallback.WALLED else Unwalled.ALLOW,
    )
    return second, f"bubblewrap could not start here ({why}); used {second}"


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
        # Tables up to 32 MB come from the heap, which keeps what was freed (up to 256 MB)
        # for the next case's: each of rope's temporaries was a fresh mapping, faulted in
        # page by page and unmapped again (7% of a rope batch's CPU; the first exercise's
        # unchanged). What the heap keeps counts against the address-space limit as before.
        "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
        "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    }
    env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ})
    return env
