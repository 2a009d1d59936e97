"""What every course platform's export reads into: a student's entry, the export as read,
and the small helpers the platforms share."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.submission.folder import is_cruft

# Copies a learner's file into a student's folder, reading it through no link.
Copy = Callable[[Path, Path], None]


@dataclass
class Student:
    """One entry of an export: whose it is, and what of theirs is graded."""

    id: str  # the platform's identity, as the row's id: canvas-12345, moodle-678, ...
    name: str = ""
    path: Path | None = None  # a file or folder for the reader, None when nothing is gradable
    relpath: str = ""
    problem: str = ""
    late: bool = False
    attempts: tuple[str, ...] = ()  # the other attempts, listed, not graded


@dataclass
class Export:
    """A class folder as read: its layout, its students, and what fit no layout."""

    layout: str
    students: list[Student] = field(default_factory=list)
    matched: int = 0  # entries of the folder that fit the layout
    total: int = 0  # entries of the folder, cruft left aside
    unmatched: list[Path] = field(default_factory=list)


def items_of(folder: Path) -> list[Path]:
    """Return a class folder's entries a learner or a platform put there."""
    return sorted(p for p in folder.iterdir() if not is_cruft(p.name))


def usable(name: str) -> bool:
    """Return True for a name a file can have in a student's folder ('..-1' restores to '..')."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


def claimed_twice(who: str, places: Sequence[str]) -> str:
    """Say why a row whose identity the export gives twice is not graded: a platform never
    does, so the folder was edited, and which one is the student's is for staff to say."""
    return (
        f"the export gives {who} more than once ({', '.join(places[:3])}); "
        "not graded: check the download"
    )


def shared_prefix(names: Sequence[str]) -> str:
    """Return the characters every one of ``names`` begins with."""
    prefix = min(names, key=len) if names else ""
    for name in names:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def present(path: Path, kind: Callable[[int], bool] = stat.S_ISREG) -> bool:
    """Whether ``path`` is there and of ``kind`` (a file, by default), following a link as
    Path.is_file does; False where it cannot even be looked at (a learner's folder without
    permission), which Path.is_file would raise."""
    try:
        return kind(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
