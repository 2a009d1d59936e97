"""GitHub Classroom: one repository per student, `assignment-prefix-login/` (in
`assignment-prefix-submissions/` as GitHub's command line clones them)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from grader.batch.platforms.records import (
    Copy,
    Export,
    Platform,
    Student,
    present,
    shared_prefix,
)

FOLDER = "-submissions"  # what `gh classroom clone student-repos` adds to the slug


def repositories_in(items: Sequence[Path]) -> list[Path]:
    return [p for p in items if p.is_dir() and not p.is_symlink() and _is_repository(p)]


def assignment_prefix(folder: Path, items: Sequence[Path]) -> str:
    """Return the assignment prefix shared by the repositories (`hw1-`), or "": most entries
    must be repositories (a stray file beside them is graded as flat).

    `gh classroom clone student-repos` names its folder `SLUG-submissions` and each
    repository `SLUG-LOGIN`: that folder's name gives the prefix even when the logins
    share a beginning (`ann-b`, `ann-c`). Otherwise it is what every repository's name
    begins with, up to its last dash."""
    folders = repositories_in(items)
    if len(folders) < 2 or 2 * len(folders) <= len(items):
        return ""
    names = [p.name for p in folders]
    here = Path(os.path.abspath(folder)).name
    if here.endswith(FOLDER) and len(here) > len(FOLDER):
        slug = here[: -len(FOLDER)] + "-"
        if all(name.startswith(slug) and len(name) > len(slug) for name in names):
            return slug
    prefix = shared_prefix(names)
    cut = prefix.rfind("-")
    return prefix[: cut + 1] if cut > 0 else ""


def _fits(folder: Path, items: Sequence[Path]) -> int:
    return len(repositories_in(items)) if assignment_prefix(folder, items) else 0


def _is_repository(folder: Path) -> bool:
    return present(folder / ".git", lambda mode: True)


def read(folder: Path, items: list[Path], scratch: Path, copy: Copy, export: Export) -> None:
    prefix = assignment_prefix(folder, items)
    repositories = set(repositories_in(items))
    for item in items:
        if not (prefix and item in repositories and item.name.startswith(prefix)):
            export.unmatched.append(item)
            continue
        export.matched += 1
        login = item.name[len(prefix) :]
        export.students.append(
            Student(id=export.layout.id_of(login), name=login, path=item, relpath=f"{item.name}/")
        )


PLATFORM = Platform(
    "classroom",
    "GitHub Classroom",
    listed=5,
    read=read,
    fits=_fits,
    is_entry=_is_repository,
)
