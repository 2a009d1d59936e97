"""Discovery: the submissions of a class, as a batch finds them in the folders it is given.

Each file given, and each item of a folder given: a .py, a notebook, a .zip or a folder is
an entry read when it is graded (grader.submission.reader); every other file is an entry
that says why it is not graded, rather than a warning alone. Every one gets an id
(names.make_ids) that stays the same from one run to the next.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from grader.batch.platforms import (
    FLAT,
    Layout,
    Platform,
    Student,
    claimed_twice,
    detect,
    identity,
    is_entry,
    items_of,
    owner_of,
    read_export,
)
from grader.errors import GraderError, Refused
from grader.files import read_bounded
from grader.names import make_ids, shown
from grader.submission.archive import EXPORT, unpack
from grader.submission.folder import is_archive, is_cruft, not_unpacked
from grader.submission.source import (
    SUBMISSION_SUFFIXES,
    ZIP_SUFFIX,
    link_problem,
    misnamed,
    protected_files,
)


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
    # What a course platform's export says of the student (see platforms/).
    student: Student | None = None


class Found(NamedTuple):
    """A submission as discovery finds it, before it has an id."""

    name: str
    file: Path | None
    relpath: str
    problem: str
    student: Student | None = None


@dataclass
class Layouts:
    """What discovery recognised: per class folder, its layout and how many entries fit."""

    seen: list[tuple[Platform, int, int]] = field(default_factory=list)  # layout, matched, total
    # What the class folders hold that no learner hands in (folder.is_cruft), as shown.
    passed: list[str] = field(default_factory=list)

    def line(self) -> str:
        """Say it in the batch's first line: `layout: canvas, 41 of 44 entries`."""
        if not self.seen:
            return ""
        parts = []
        for layout, matched, total in self.seen:
            if layout is FLAT:
                parts.append(f"{FLAT}, {total} entries")
            else:
                rest = f"; {total - matched} graded as {FLAT}" if matched < total else ""
                parts.append(f"{layout}, {matched} of {total} entries{rest}")
        return "layout: " + " | ".join(parts)

    def passed_line(self, shown_at_most: int = 5) -> str:
        """Say how many entries of the class folders were no learner's, and which."""
        if not self.passed:
            return ""
        more = ", ..." if len(self.passed) > shown_at_most else ""
        return (
            f"passed over: {_entries(len(self.passed))} no learner hands in (hidden files, "
            f"caches, system files): {', '.join(self.passed[:shown_at_most])}{more}"
        )

    def names(self) -> Layout:
        """Return the layouts as batch.json records them: `canvas`, or `canvas+flat`."""
        return Layout.of(layout for layout, _, _ in self.seen)


def discover(
    paths: Sequence[Path],
    *,
    protected: Sequence[Path] = (),
    skip: Sequence[Path] = (),
    strays: list[str] | None = None,
    layout: Platform | None = None,
    scratch: Path | None = None,
    layouts: Layouts | None = None,
) -> list[Entry]:
    """Find submissions: each .py file given, each .py in a folder, each subfolder's one .py.

    A subfolder with no .py or with several, a symbolic link, or a file inside the
    problem's ``protected`` folders becomes an entry with a problem, not an error: the
    learner gets a row that says why. Nothing is read through a link. Files and folders in
    ``skip`` (the batch's own output, say) are passed over; the files of a class folder that are
    neither .py nor folders are too, and their names go to ``strays`` for a warning.

    A class folder is read in its course platform's layout (``layout`` forces one; see
    platforms/), whose students' folders are made in ``scratch``; what was recognised goes
    to ``layouts``.
    """
    found: list[Found] = []
    paths = _once(paths)
    several = len(paths) > 1
    # A path given is graded as given, and passed over in any folder given around it: a
    # learner's file or a folder of late ones, given beside their class, counts once.
    passed_over = {p.resolve() for p in (*skip, *(paths if several else ()))}
    base = os.path.commonpath(  # the folder the files given share, however typed
        [os.path.dirname(os.path.realpath(p)) for p in paths if p.is_file()] or ["."]
    )
    for path in paths:
        # Only a zip given alone is taken for a platform's download: among several paths, a
        # zip is a learner's, whose contents (named like another platform's entries, say)
        # must never make rows of other students.
        export = _downloaded(path, scratch, layout) if len(paths) == 1 else None
        if export is not None:
            found += _class_folder(
                export, "", protected, passed_over, strays, layout, scratch, layouts
            )
        elif path.is_file():
            rel = _given_as(path, base) if several else shown(path.name)
            found.append(Found(path.stem, path, rel, link_problem(path, protected)))
        elif path.is_dir():
            prefix = f"{shown(path.resolve().name)}/" if several else ""
            found += _class_folder(
                path, prefix, protected, passed_over, strays, layout, scratch, layouts
            )
        else:
            raise GraderError(f"no such file or folder: {shown(path)!r}")
    return _with_ids(_each_once(found))


def _given_as(path: Path, base: str) -> str:
    """Name a file given among several from ``base``, the folder all the files given share
    (its own folder's name at least): `a/x/sol.py`, `b/x/sol.py`."""
    rel = os.path.relpath(os.path.realpath(path), base)
    return shown(rel if os.sep in rel else os.path.join(os.path.basename(base), rel))


def _once(paths: Sequence[Path]) -> list[Path]:
    """Return the paths given, each place once: a path given twice, or a folder and a link
    to it, is one class. (A hard link is another name, and may be another learner's: two
    rows. A folder inside another given is a class folder of its own.)"""
    named: dict[str, Path] = {}
    for given in paths:
        named.setdefault(os.path.realpath(given), given)
    return list(named.values())


def _each_once(found: list[Found]) -> list[Found]:
    """Leave ungraded, saying why, every entry of a student the class's exports give more
    than once: two sections' downloads side by side that both hold them, an edited download.
    Graded, both would be written into their one gradebook row, the last over the first;
    which one is theirs is for staff to say."""
    places: dict[str, list[str]] = {}
    for f in found:
        if f.student is not None:
            places.setdefault(identity(f.student.id), []).append(f.relpath.rstrip("/"))
    return [
        f._replace(file=None, problem=claimed_twice(shown(f.student.id), where))
        if f.student is not None and len(where := places[identity(f.student.id)]) > 1
        else f
        for f in found
    ]


def _class_folder(
    folder: Path,
    prefix: str,
    protected: Sequence[Path],
    passed_over: set[Path],
    strays: list[str] | None,
    layout: Platform | None,
    scratch: Path | None,
    layouts: Layouts | None,
    *,
    top: bool = True,
) -> list[Found]:
    """Return a class folder's entries, in the layout its platform exported it in.

    Only a folder given (``top``) may hold sections: a section's own folders are its
    students', however they look."""
    items = [p for p in items_of(folder) if p.is_symlink() or p.resolve() not in passed_over]
    chosen = layout or detect(folder, items)
    # Sections side by side, unless flat was asked for (nothing interpreted) or the folder
    # is itself an export; a platform named with --layout is each section's.
    itself = chosen if layout is None else detect(folder, items)
    sections = _sections(items) if top and layout is not FLAT and itself is FLAT else []
    if sections and scratch is not None:
        # Several exports (sections of one course) side by side: each read in its layout.
        found = []
        for section in sections:
            found += _class_folder(
                section,
                f"{prefix}{shown(section.name)}/",
                protected,
                passed_over,
                strays,
                layout or detect(section, items_of(section), least=1),  # may hold one
                scratch,
                layouts,
                top=False,
            )
        rest = {p.resolve() for p in sections}
        return found + _folder(folder, prefix, protected, passed_over | rest, strays, layouts)
    if chosen is FLAT or scratch is None:
        if layouts is not None:
            layouts.seen.append((FLAT, len(items), len(items)))
        return _folder(folder, prefix, protected, passed_over, strays, layouts)
    own = scratch / f"export-{len(list(scratch.iterdir()))}"
    own.mkdir()
    export = read_export(folder, chosen, own, copy=_Copier(protected))
    if layouts is not None:
        layouts.seen.append((chosen, export.matched, export.total))
    found = [
        Found(s.id, s.path, prefix + s.relpath, s.problem, s)
        for s in export.students
        if s.path is None or s.path.resolve() not in passed_over
    ]
    rest = {p.resolve() for p in items if p not in export.unmatched}
    return found + _folder(folder, prefix, protected, passed_over | rest, strays, layouts)


def _sections(items: Sequence[Path]) -> list[Path]:
    """Return the exports side by side in a class folder (sections of one course), or none.

    Only a folder every one of whose folders is an export, and which holds no code of its
    own: in a flat class, a learner's folder shaped like an export is that learner's.
    """
    folders = [p for p in items if p.is_dir() and not p.is_symlink()]
    # Two at least: one folder alone is one student's (a download of one Moodle entry, say),
    # whatever their files are named.
    if len(folders) < 2 or any(p.suffix.lower() in GRADED_SUFFIXES for p in items if p.is_file()):
        return []
    # A section may hold one student: one entry in its layout is enough for it, since every
    # folder must be an export, all of one platform, and one at least an export by the
    # usual count (an innocent `lab_1_2_sol.py` fits Canvas's naming: one learner's folder
    # shaped as another platform's export must not turn a flat class into sections).
    layouts: set[Platform] = set()
    counted = False
    for folder in folders:
        try:
            inner = items_of(folder)
        except OSError:  # a folder that cannot be listed is a learner's, said in its row
            return []
        layouts.add(detect(folder, inner, least=1))
        counted = counted or detect(folder, inner) is not FLAT
    return folders if counted and len(layouts) == 1 and FLAT not in layouts else []


def _downloaded(path: Path, scratch: Path | None, layout: Platform | None) -> Path | None:
    """Return the folder a platform's download unzips to, when ``path`` is one (the .zip
    exactly as downloaded); None for anything else, a learner's own zip included."""
    if scratch is None or path.is_symlink() or not path.is_file():
        return None
    if path.suffix.lower() != ZIP_SUFFIX:
        return None
    into = unpacked = scratch / f"download-{len(list(scratch.iterdir()))}"
    into.mkdir()
    try:
        unpack(path, into, nested=False, bounds=EXPORT, owner=owner_of)
    except (GraderError, OSError):
        # Graded as a learner's zip, whose row says what is wrong with it (the disk full
        # too: what was written goes, and the batch goes on).
        shutil.rmtree(unpacked, ignore_errors=True)
        return None
    items = items_of(into)
    if len(items) == 1 and items[0].is_dir() and not items[0].is_symlink():
        inner = items_of(items[0])
        # A download that holds one folder of the class; not one student's entry, whatever
        # their files are named (a Gradescope metadata file in a Moodle student's folder).
        if not is_entry(items[0]) and _is_export(items[0], inner):
            into, items = items[0], inner
    # A layout given for a download is taken at its word: a class of one student may look
    # like a flat folder.
    forced = layout is not None and layout is not FLAT
    if forced or _is_export(into, items):
        return into
    shutil.rmtree(unpacked, ignore_errors=True)  # a learner's zip, read again as one
    return None


def _is_export(folder: Path, items: Sequence[Path]) -> bool:
    """Whether a download unpacked holds a platform's export, or several side by side."""
    return detect(folder, items) is not FLAT or bool(_sections(items))


class _Copier:
    """Copies a learner's files out of an export into their folder, read as a submission is.

    A link, a FIFO, a file inside the problem, a file past its bound: never copied, so never
    read; a student left with nothing gets a row that says their folder holds no code. A
    folder is copied within bounds of depth, entries and bytes for each student's folder,
    and whatever the export holds, nothing it does ends the batch.
    """

    def __init__(self, protected: Sequence[Path]) -> None:
        self.protected = protected
        # A hard link is another name of the same file: its copy would carry a hidden case
        # out under a new inode, which the reader's own check could no longer see.
        self.inodes = protected_files(protected)
        self.spent: dict[Path, list[int]] = {}  # each student's folder: [bytes, entries]

    def __call__(self, source: Path, target: Path) -> None:
        self._copy(source, target, self.spent.setdefault(target.parent, [0, 0]), depth=0)

    def _copy(self, source: Path, target: Path, spent: list[int], depth: int) -> None:
        if spent[1] >= MAX_COPIED_ENTRIES or os.path.lexists(target):
            return
        spent[1] += 1
        if source.is_dir() and not source.is_symlink():
            if depth >= MAX_COPIED_DEPTH:
                return
            try:
                target.mkdir()
                children = sorted(source.iterdir())[:MAX_COPIED_ENTRIES]
            except OSError:
                return
            for child in children:
                if not is_cruft(child.name):
                    self._copy(child, target / child.name, spent, depth + 1)
            return
        if link_problem(source, self.protected) or _inode(source) in self.inodes:
            return
        try:
            data = read_bounded(source, min(MAX_COPIED_BYTES, MAX_STUDENT_BYTES - spent[0]))
            target.write_bytes(data)
        except (Refused, OSError):
            return
        spent[0] += len(data)


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat(follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino


# A learner's file copied out of an export: the largest a reader takes (a notebook of plots);
# and what one student's folder may take in all, however many files and folders deep.
MAX_COPIED_BYTES = 64 * 1024 * 1024
MAX_STUDENT_BYTES = 256 * 1024 * 1024
MAX_COPIED_ENTRIES = 1000
MAX_COPIED_DEPTH = 12


def _folder(
    folder: Path,
    prefix: str,
    protected: Sequence[Path],
    passed_over: set[Path],
    strays: list[str] | None,
    layouts: Layouts | None = None,
) -> list[Found]:
    """Return an entry for every item of a class folder that a learner could have put there:
    a .py, a notebook, a .zip and a folder are read when graded (submission.reader); any
    other file gets a row that says why it was not graded, rather than a warning alone.
    What no learner hands in (folder.is_cruft) is passed over, and counted in ``layouts``."""
    found: list[Found] = []
    for item in sorted(folder.iterdir()):
        rel = prefix + shown(item.name)
        if not item.is_symlink() and item.resolve() in passed_over:
            continue
        if is_cruft(item.name):
            if layouts is not None:
                layouts.passed.append(f"{rel}/" if item.is_dir() else rel)
            continue
        name = item.name if item.is_dir() else item.stem
        if item.is_symlink():
            found.append(Found(name, None, rel, link_problem(item, protected)))
        elif item.is_dir():
            found.append(Found(name, item, f"{rel}/", ""))
        elif item.suffix.lower() in GRADED_SUFFIXES:
            found.append(Found(name, item, rel, link_problem(item, protected)))
        elif item.is_file():
            # Python under another name (zoe.py.txt) is code: its row says to rename it.
            renamed = misnamed(item, protected)
            found.append(Found(name, None, rel, renamed or _not_gradable(item)))
            if strays is not None and not renamed:
                strays.append(rel)
    return found


# What a class folder's entries may be, besides folders: read when graded.
GRADED_SUFFIXES = (*SUBMISSION_SUFFIXES, ZIP_SUFFIX)


def _not_gradable(item: Path) -> str:
    """Say, for a TA, why a file of the class folder is not graded."""
    if is_archive(item):
        return not_unpacked(shown(item.name))
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
        Entry(entry_id, None if f.problem else f.file, f.relpath, f.problem, f.student)
        for entry_id, f in zip(ids, found, strict=True)
    ]


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"
