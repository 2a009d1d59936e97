"""Discovery: the submissions of a class, as a batch finds them in the folders it is given.

Each file given, and each item of a folder given: a .py, a notebook, a .zip or a folder is
an entry read when it is graded (grader.submission.reader); every other file is an entry
that says why it is not graded, rather than a warning alone. Every one gets an id
(names.make_ids) that stays the same from one run to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.names import make_ids, shown
from grader.submission.folder import ARCHIVE_SUFFIXES, is_cruft
from grader.submission.source import link_problem


@dataclass(frozen=True)
class Entry:
    """One learner's submission: a stable id, where it is, and its file or why none.

    ``relpath`` is the submission's path relative to the folder graded (printable text,
    prefixed with that folder's name when several were given); ``problem`` says why the
    entry is not graded, or is empty.
    """

    id: str
    path: Path | None
    relpath: str = ""
    problem: str = ""


class Found(NamedTuple):
    """A submission as discovery finds it, before it has an id."""

    name: str
    file: Path | None
    relpath: str
    problem: str


def discover(
    paths: Sequence[Path],
    *,
    protected: Sequence[Path] = (),
    skip: Sequence[Path] = (),
    strays: list[str] | None = None,
) -> list[Entry]:
    """Find submissions: each .py file given, each .py in a folder, each subfolder's one .py.

    A subfolder with no .py or with several, a symbolic link, or a file inside the
    problem's ``protected`` folders becomes an entry with a problem, not an error: the
    learner gets a row that says why. Nothing is read through a link. Files and folders in
    ``skip`` (the batch's own output, say) are passed over; the files of a class folder that are
    neither .py nor folders are too, and their names go to ``strays`` for a warning.
    """
    found: list[Found] = []
    several = len(paths) > 1
    passed_over = {p.resolve() for p in skip}
    for path in paths:
        if path.is_file():
            found.append(Found(path.stem, path, shown(path.name), link_problem(path, protected)))
        elif path.is_dir():
            prefix = f"{shown(path.resolve().name)}/" if several else ""
            found += _folder(path, prefix, protected, passed_over, strays)
        else:
            raise GraderError(f"no such file or folder: {shown(path)!r}")
    return _with_ids(found)


def _folder(
    folder: Path,
    prefix: str,
    protected: Sequence[Path],
    passed_over: set[Path],
    strays: list[str] | None,
) -> list[Found]:
    """Return an entry for every item of a class folder that a learner could have put there:
    a .py, a notebook, a .zip and a folder are read when graded (submission.reader); any
    other file gets a row that says why it was not graded, rather than a warning alone."""
    found: list[Found] = []
    for item in sorted(folder.iterdir()):
        rel = prefix + shown(item.name)
        if is_cruft(item.name) or item.name.startswith("."):
            continue
        if not item.is_symlink() and item.resolve() in passed_over:
            continue
        name = item.name if item.is_dir() else item.stem
        if item.is_symlink():
            found.append(Found(name, None, rel, link_problem(item, protected)))
        elif item.is_dir():
            found.append(Found(name, item, f"{rel}/", ""))
        elif item.suffix.lower() in GRADED_SUFFIXES:
            found.append(Found(name, item, rel, link_problem(item, protected)))
        elif item.is_file():
            found.append(Found(name, None, rel, _not_gradable(item)))
            if strays is not None:
                strays.append(rel)
    return found


# What a class folder's entries may be, besides folders: read when graded.
GRADED_SUFFIXES = (".py", ".ipynb", ".zip")


def _not_gradable(item: Path) -> str:
    """Say, for a TA, why a file of the class folder is not graded."""
    if item.name.lower().endswith(ARCHIVE_SUFFIXES):
        return f"{shown(item.name)} is an archive; only .zip files are unpacked"
    kind = shown(item.suffix.lower() or "a file without a suffix")
    return f"{kind} only; ask for a .py or .ipynb file (or a .zip or folder of them)"


def strays_note(strays: Sequence[str], shown_at_most: int = 5) -> tuple[str, ...]:
    """Say which files of the class folders hold no code; each has a not-graded row too."""
    if not strays:
        return ()
    names = ", ".join(strays[:shown_at_most]) + (", ..." if len(strays) > shown_at_most else "")
    return (f"{len(strays)} file(s) in the class folder hold no code, not graded: {names}",)


def _with_ids(found: list[Found]) -> list[Entry]:
    """Give every entry an id (see names.make_ids): stable from one run to the next."""
    # Named as shown: bytes that are not UTF-8 become their \xNN escape, as in every report.
    ids = make_ids((shown(f.name), f.relpath) for f in found)
    return [
        Entry(entry_id, None if f.problem else f.file, f.relpath, f.problem)
        for entry_id, f in zip(ids, found, strict=True)
    ]
