"""What every course platform is and reads into: the Platform each module declares, a
student's entry, the export as read, and the small helpers the platforms share."""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.platforms.sheet import Book, Sheet
from grader.results import Results
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

    layout: Platform
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


def identity(key: str) -> str:
    """A platform's identity as compared: a name in NFD (as macOS writes it) equals its NFC."""
    return unicodedata.normalize("NFC", key)


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


@dataclass(frozen=True)
class Claim:
    """Whose an entry of a download is, by one platform's naming, and where in the name the
    words the platform wrote lie (``start`` to ``end``): the rest is the student's own."""

    owner: str
    start: int
    end: int


# Reads a class folder's entries (``items``) in one platform's layout into ``export``,
# making students' folders in ``scratch`` with ``copy``.
Reader = Callable[[Path, list[Path], Path, Copy, "Export"], None]
# Reads a gradebook file the platform exported: the column to fill (``wanted``, a title, or
# None for the only one), its rows by the platform's identity and their points possible;
# refuses, naming ``what``, a file that is not the platform's.
GradebookReader = Callable[[Sheet, "str | None", str], Book]
# Writes what the platform takes back besides the gradebook (Moodle's zip of feedback files)
# from its students' results, by id; returns how many students it holds.
Extra = Callable[[Path, "Mapping[str, Results]"], int]


def _none_fit(folder: Path, items: Sequence[Path]) -> int:
    return 0


@dataclass(frozen=True, eq=False)
class Platform:
    """One course platform, as its module in grader/batch/platforms/ declares it: its name
    (on the command line, in ids and in batch.json), how its download is recognised, how it
    is read, and how its gradebook file is filled. Compared by identity, never by name.

    The registry (grader/batch/platforms/__init__.py) finds every module of the package that
    declares one as ``PLATFORM``: a platform is added by its module, its docs and its tests.
    """

    name: str
    title: str  # as a TA knows it: "GitHub Classroom"
    listed: int  # its place in every list (--layout's choices, help, docs): the lowest first
    # None for "flat", the grader's own layout: a file or a folder per learner.
    read: Reader | None = None
    # How many of a class folder's entries fit its naming (the majority's layout is taken).
    fits: Callable[[Path, Sequence[Path]], int] = _none_fit
    # Ties of ``fits`` go to the more particular naming: the higher.
    particular: int = 0
    # A file that makes a whole folder this platform's export, however its entries look.
    marker: str = ""
    # Whether a folder is named as one student's entry (a download of one entry is a student).
    is_entry: Callable[[Path], bool] = lambda folder: False
    # Whose a download's top-level file is, by its naming (each owner has a share of bounds).
    claim: Callable[[str], Claim | None] = lambda name: None
    # Its gradebook file, where `grader export --to` can fill one: what a TA downloads.
    gradebook: GradebookReader | None = None
    gradebook_file: str = ""  # "Canvas's Grades > Export", in --template's help
    # What else `grader export` can write for it (--feedback-zip), and what it is for.
    extra: Extra | None = None
    extra_for: str = ""  # "its upload of feedback files"
    # Why a student key of this platform is in no gradebook ("" where it may be): Canvas's
    # anonymous ids. An export holding one writes nothing, rather than a zero for all.
    ungradable: Callable[[str], str] = lambda key: ""

    def __str__(self) -> str:
        return self.name

    def id_of(self, key: str) -> str:
        """Return the id of this platform's student ``key``: `canvas-1234`."""
        return f"{self.name}-{key}"

    def key_of(self, entry_id: str) -> str | None:
        """Return the student key that an id of this platform holds; None for any other id."""
        head = f"{self.name}-"
        return entry_id[len(head) :] if entry_id.startswith(head) else None
