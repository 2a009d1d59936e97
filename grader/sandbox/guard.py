"""What a child could read that it must not: the guard run before any child starts.

The hidden cases, the reference and a batch's output must lie outside everything the
sandbox lets a child read (walls.read_paths), under every name a path can take: links,
hard links, bind mounts. Without a sandbox the child reads what this user reads: the guard
then warns, once, of what a sandbox would refuse.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.sandbox.walls import read_paths
from grader.states import Backend


def guard(protected: Sequence[Path], backend: Backend) -> None:
    """Refuse to run a child that could read the answers, and close /proc to it."""
    if backend is not Backend.NONE:
        check_hidden_unreachable(protected)
    else:
        # Without a sandbox the child reads whatever this user can: the guard has nothing to
        # refuse, but the author still learns of a layout that would be refused with one.
        _warn_once(tuple(map(str, exposed_files(protected))))
    # A child of the same user could otherwise read this process's memory via /proc.
    forbid_memory_reads()


def forbid_memory_reads() -> None:
    """Make this process non-dumpable, so no same-user process can read its memory.

    Where the C library has no prctl (macOS, Windows), there is no /proc to read it from
    either, and nothing to do.
    """
    import ctypes

    pr_set_dumpable = 4
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, TypeError, AttributeError):  # no C library by that name, or no prctl
        return
    prctl(pr_set_dumpable, 0, 0, 0, 0)


@functools.cache
def _warn_once(found: tuple[str, ...]) -> None:
    for text in found:
        print(f"grader: warning: {text}", file=sys.stderr)


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
