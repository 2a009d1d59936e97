"""The grader's temporary folders: each claimed by a lock for its whole life, so that a later
start can tell a folder left by a grader that died (SIGKILL, a lost machine) from one in use.

A pid written in the folder proves nothing where containers share TMPDIR (another
container's grader may have the same pid, and its /proc is not ours); an flock is held by
the open file itself and vanishes with its holder, whoever and wherever that was. The lock
is taken on the folder itself rather than a file inside it: a child that writes in its
folder could delete a file, but cannot remove the folder it works in. Where the system
has no flock (Windows), folders are made and removed as usual, and none is swept.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator

from grader.files import delete

try:
    import fcntl
except ImportError:  # Windows: no flock, so no folder can be told abandoned
    LOCKS = False
else:
    LOCKS = hasattr(os, "O_DIRECTORY")

PREFIX = "grader-"
# A folder younger than this is never swept: between mkdtemp and the lock that follows it,
# a new folder is unlocked for a moment, and the bubblewrap probe's short-lived folder
# holds no lock at all.
GRACE_SECONDS = 60.0

_claims: dict[str, int] = {}
_claims_lock = threading.Lock()


def claim(prefix: str = PREFIX, root: str | None = None) -> str:
    """Make a fresh folder and hold its lock until `release`; return its path."""
    path = tempfile.mkdtemp(prefix=prefix, dir=root)
    if not LOCKS:
        return path
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX)
    with _claims_lock:
        _claims[path] = fd
    return path


def release(path: str) -> None:
    """Let go of a folder's lock, once the folder is removed (or given up)."""
    with _claims_lock:
        fd = _claims.pop(path, None)
    if fd is not None:
        os.close(fd)


def remove_tree(path: str) -> None:
    """Delete a claimed folder, whatever a child left there, then give up its claim; never
    raise."""
    try:
        delete(path)
    finally:
        release(path)  # after the removal: until then the folder is still ours


@contextlib.contextmanager
def claimed(prefix: str = PREFIX) -> Iterator[str]:
    """A claimed folder for the length of a `with`, removed after it."""
    path = claim(prefix)
    try:
        yield path
    finally:
        remove_tree(path)


@functools.cache
def sweep_once() -> int:
    """Run `sweep` once a process; callers do so once their child is starting."""
    return sweep()


def sweep() -> int:
    """Remove the grader folders of this user that no live grader holds.

    Return how many were removed. Never raises: a folder that cannot be examined or removed
    is left for the next start.
    """
    removed = 0
    if not LOCKS:
        return 0
    top = tempfile.gettempdir()
    try:
        entries = list(os.scandir(top))
    except OSError:
        return 0
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not _stale(entry, now):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a grader is using it
        else:
            remove_tree(entry.path)
            removed += 1
        finally:
            os.close(fd)
    return removed


def _stale(entry: os.DirEntry[str], now: float) -> bool:
    """Return True for a folder of this user, not a link, older than the grace period."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.geteuid()
        and now - info.st_mtime > GRACE_SECONDS
    )
