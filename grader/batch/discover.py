"""Discovery: the submissions of a class, as a batch finds them in the folders it is given.

Each .py file given, each .py in a folder, each subfolder's one .py; every one gets an id
(names.make_ids) that stays the same from one run to the next, and an entry that cannot be
graded (no .py, several, a link) says why instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from grader.errors import GraderError
from grader.names import make_ids, shown
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


# Folders Python or its tools leave beside the files they ran: never a learner's.
NOT_LEARNERS = frozenset({"__pycache__"})


def _folder(
    folder: Path,
    prefix: str,
    protected: Sequence[Path],
    passed_over: set[Path],
    strays: list[str] | None,
) -> list[Found]:
    found: list[Found] = []
    for item in sorted(folder.iterdir()):
        rel = prefix + shown(item.name)
        if not item.is_symlink() and item.resolve() in passed_over:
            continue
        if item.is_symlink():
            if item.suffix == ".py" or item.is_dir():
                name = item.stem if item.suffix == ".py" else item.name
                found.append(Found(name, None, rel, link_problem(item, protected)))
            continue
        if item.is_file() and item.suffix == ".py":
            found.append(Found(item.stem, item, rel, link_problem(item, protected)))
        elif item.is_dir() and not item.name.startswith(".") and item.name not in NOT_LEARNERS:
            files = sorted(p for p in item.iterdir() if p.suffix == ".py" and not p.is_dir())
            if len(files) == 1:
                problem = link_problem(files[0], protected)
                found.append(Found(item.name, files[0], f"{rel}/{shown(files[0].name)}", problem))
            elif files:
                names = ", ".join(shown(p.name) for p in files)
                found.append(Found(item.name, None, f"{rel}/", f"several .py files ({names})"))
            else:
                found.append(Found(item.name, None, f"{rel}/", "no .py file in the folder"))
        elif item.is_file() and strays is not None and not item.name.startswith("."):
            strays.append(rel)
    return found


def strays_note(strays: Sequence[str], shown_at_most: int = 5) -> tuple[str, ...]:
    """Say which files of the class folders were not graded for not being .py files."""
    if not strays:
        return ()
    names = ", ".join(strays[:shown_at_most]) + (", ..." if len(strays) > shown_at_most else "")
    return (f"{len(strays)} file(s) in the class folder are not .py files, not graded: {names}",)


def _with_ids(found: list[Found]) -> list[Entry]:
    """Give every entry an id (see names.make_ids): stable from one run to the next."""
    # Named as shown: bytes that are not UTF-8 become their \xNN escape, as in every report.
    ids = make_ids((shown(f.name), f.relpath) for f in found)
    return [
        Entry(entry_id, None if f.problem else f.file, f.relpath, f.problem)
        for entry_id, f in zip(ids, found, strict=True)
    ]
